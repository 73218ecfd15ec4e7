// Owns the demo data's vocabulary: names, phone plans, tags, notes, standalone task titles and
// the knowledge articles (conversation topics are in ./seed-topics.ts). Text only.

export const DEMO_PASSWORD = 'demo-password-2026';

/** A comma-separated word list, kept compact where an array literal would take a line per word. */
const list = (s: string): string[] =>
  s
    .split(',')
    .map((w) => w.trim())
    .filter((w) => w !== '');

export const FIRST_NAMES = list(`
  Emma, Liam, Olivia, Noah, Sophia, Lucas, Mia, Mateo, Amelia, Leo, Isabella, Hugo, Charlotte, Oliver, Chloé, Louis,
  Léa, Gabriel, Hannah, Felix, Lena, Jonas, Sofia, Marco, Giulia, Luca, Lucía, Javier, Carmen, Diego, Ana, João,
  Beatriz, Pedro, Yuki, Haruto, Sakura, Kenji, Wei, Mei, Jin, Priya, Arjun, Ananya, Rohan, Fatima, Omar, Layla,
  Yusuf, Aisha, Ethan, Grace, James, Zoe, Daniel, Ava, Samuel, Ella, Henry, Nora, Erik, Freya, Lars, Ingrid, Sven,
  Astrid, Mikhail, Anna, Piotr, Zofia, Tomás, Siobhan, Connor, Aoife, Kwame, Amara, Tariq, Nadia, Elif, Emre, Chiara,
  Matteo, Inès, Théo, Noémie, Björn
`);

export const LAST_NAMES = list(`
  Smith, Johnson, Williams, Brown, Garcia, Martinez, Müller, Schmidt, Schneider, Fischer, Weber, Meyer, Martin,
  Bernard, Dubois, Lefèvre, Moreau, Rossi, Russo, Ferrari, Esposito, Bianchi, Fernández, López, González, Sánchez,
  Pérez, Silva, Santos, Oliveira, Costa, Tanaka, Suzuki, Takahashi, Watanabe, Chen, Wang, Li, Zhang, Kim, Park,
  Nguyen, Patel, Sharma, Singh, Khan, Ali, Hassan, Haddad, O'Brien, Murphy, Kelly, Walsh, Andersen, Johansson,
  Nilsson, Larsen, Jansen, de Vries, van Dijk, Novak, Kowalski, Nowak, Ivanova, Popescu, Papadopoulos, Yilmaz, Demir,
  Mensah, Okafor, Taylor, Anderson, Thomas, Moore, Clark, Lewis, Walker, Hall, Young, King, Wright, Scott, Green,
  Baker, Adams, Nelson
`);

export const STAFF_NAMES = list(`
  Maria Lopez, Tom Becker, Aiko Sato, Daniel Okoye, Lucia Romano, Peter Novak, Sara Lindqvist, Omar Haddad,
  Claire Dubois, Ravi Mehta
`);

/** Reserved example domains (RFC 2606), so demo addresses never reach a real mailbox. */
export const EMAIL_DOMAINS = ['example.com', 'example.net', 'example.org', 'mail.example.com', 'guest.example'];

/**
 * Mobile number plans: country code, a fixed national prefix and how many digits follow it.
 * Every plan leaves at least 8 free digits, so 10^8 seeded guests fit without a repeat.
 */
export const PHONE_PLANS: readonly { cc: string; prefix: string; digits: number; weight: number }[] = [
  { cc: '1', prefix: '2', digits: 9, weight: 22 },
  { cc: '44', prefix: '7', digits: 9, weight: 14 },
  { cc: '49', prefix: '17', digits: 8, weight: 12 },
  { cc: '33', prefix: '6', digits: 8, weight: 10 },
  { cc: '34', prefix: '6', digits: 8, weight: 8 },
  { cc: '39', prefix: '3', digits: 9, weight: 8 },
  { cc: '31', prefix: '6', digits: 8, weight: 5 },
  { cc: '81', prefix: '90', digits: 8, weight: 5 },
  { cc: '61', prefix: '4', digits: 8, weight: 5 },
  { cc: '971', prefix: '5', digits: 8, weight: 4 },
  { cc: '55', prefix: '119', digits: 8, weight: 4 },
  { cc: '91', prefix: '9', digits: 9, weight: 3 },
];

export const GUEST_TAGS = list(`
  vip, returning, business, family, late-checkout, early-checkin, honeymoon, loyalty-gold, loyalty-platinum, group,
  long-stay, accessibility, pet-owner, allergy, corporate, spa-lover
`);

/** Times guests and staff mention in messages and tasks. */
export const TIMES = list('09:30, 10:00, 11:30, 13:00, 14:00, 15:30, 16:00, 18:30, 19:00, 20:00, 21:30');

export const GUEST_NOTES = [
  'Prefers a high floor away from the lift.',
  'Allergic to nuts; kitchen informed.',
  'Celebrating an anniversary this stay.',
  'Travels with a small dog.',
  'Requests feather-free pillows.',
  'Usually arrives late in the evening.',
  'Corporate rate through the company account.',
  'Likes a quiet room facing the courtyard.',
  'Needs an accessible bathroom.',
  'Always books the spa on the second day.',
  'Prefers contact by WhatsApp.',
  'Vegetarian; breakfast team informed.',
];

/** Standalone task titles, for tasks not linked to a conversation. */
export const DEPARTMENT_TASKS: Record<string, string[]> = {
  housekeeping: [
    'Deep clean room {room} after checkout',
    'Restock minibar on floor {floor}',
    'Turn-down service for VIP in room {room}',
  ],
  'front-desk': [
    "Prepare welcome letters for tomorrow's arrivals",
    'Print group rooming list',
    'Check no-shows from last night',
  ],
  maintenance: [
    'Replace light bulb in corridor on floor {floor}',
    'Service lift B',
    'Test fire alarm on floor {floor}',
  ],
  concierge: ['Update restaurant recommendation list', 'Order theatre tickets for the weekend', 'Restock city maps'],
  'food-and-beverage': [
    'Set up breakfast for a group of 20',
    'Check wine inventory',
    'Prepare coffee break for the conference',
  ],
};

export const TASK_NOTES = [
  'Done, guest was happy.',
  'Took longer than expected.',
  'Guest not in the room, left a note.',
];

export interface Article {
  title: string;
  category: string;
  content: string;
}

// biome-ignore format: one article per entry reads better than the formatter's split.
export const ARTICLES: Article[] = [
  { category: "check-in", title: "Check-in and check-out times",
    content: "Check-in is from 3 pm, check-out until 11 am. Early check-in and late check-out depend on availability; returning guests get late check-out until 2 pm free of charge." },
  { category: "check-in", title: "Documents needed at check-in",
    content: "Every adult guest shows a passport or national identity card. We hold a credit card for incidentals; debit cards are accepted with a 100 EUR deposit." },
  { category: "check-in", title: "Luggage storage",
    content: "Luggage can be stored free of charge at reception before check-in and after check-out, on the day of arrival or departure." },
  { category: "amenities", title: "Wi-Fi",
    content: "Free Wi-Fi in all rooms and public areas. Network \"Hotel-Guest\"; the password is printed on the key card holder. Premium bandwidth for streaming is free for loyalty members." },
  { category: "amenities", title: "Fitness room",
    content: "The fitness room on level 1 is open 24 hours with your room key. Towels and water are provided." },
  { category: "amenities", title: "Pool and sauna",
    content: "Indoor pool and sauna open 7 am to 10 pm. Children under 14 are welcome in the pool until 6 pm with an adult." },
  { category: "dining", title: "Breakfast",
    content: "Breakfast buffet from 6:30 to 10:30 on weekdays and until 11:00 at weekends, in the garden restaurant. Vegan, gluten-free and lactose-free options are available; tell us about allergies." },
  { category: "dining", title: "Room service",
    content: "Room service is available from 7 am to 11 pm. A smaller night menu is available until 2 am. A tray charge of 5 EUR applies." },
  { category: "dining", title: "Restaurant and bar hours",
    content: "The restaurant serves dinner from 6 pm to 10:30 pm; reservations recommended at weekends. The lobby bar is open until 1 am." },
  { category: "dining", title: "Allergies and dietary needs",
    content: "Our kitchen can prepare dishes free of the 14 major allergens. Please tell us at booking or check-in; the note is added to your guest profile." },
  { category: "transport", title: "Parking",
    content: "The underground garage is open 24/7 at 25 EUR per night, with in-and-out access. Two EV chargers (22 kW) can be reserved at reception. Maximum vehicle height 2.0 m." },
  { category: "transport", title: "Airport transfer",
    content: "We arrange private transfers to and from the airport for 65 EUR per car (up to 3 guests). Book at least 12 hours in advance." },
  { category: "transport", title: "Public transport",
    content: "The central station is 10 minutes on foot; the airport train leaves every 15 minutes. Reception sells day tickets for the city network." },
  { category: "policies", title: "Pets",
    content: "Dogs and cats up to 15 kg are welcome for 20 EUR per night, including a bed and bowls. Pets are not allowed in the restaurant or the spa." },
  { category: "policies", title: "Smoking",
    content: "All rooms and indoor areas are non-smoking. Smoking is allowed on the garden terrace. A cleaning fee of 250 EUR applies to smoking in rooms." },
  { category: "policies", title: "Cancellation policy",
    content: "Flexible rates can be cancelled free of charge until 6 pm on the day before arrival. Non-refundable rates cannot be changed or refunded." },
  { category: "policies", title: "Children and extra beds",
    content: "Children under 6 stay free in the parents' room. Cots are free; an extra bed costs 35 EUR per night including breakfast." },
  { category: "policies", title: "Quiet hours",
    content: "Quiet hours are from 10 pm to 7 am. Please let reception know about any disturbance; the night manager will take care of it." },
  { category: "policies", title: "Payment methods",
    content: "We accept Visa, Mastercard, American Express, Apple Pay and Google Pay. Cash is accepted in EUR only." },
  { category: "wellness", title: "Spa treatments",
    content: "Massages and facials from 10 am to 8 pm, bookable through reception or by message. Cancel at least 4 hours ahead to avoid a charge." },
  { category: "wellness", title: "Yoga classes",
    content: "Free yoga classes on the roof terrace on Tuesday, Thursday and Saturday at 7:30 am, weather permitting. Mats are provided." },
  { category: "services", title: "Late checkout",
    content: "Late checkout until 2 pm costs 30 EUR, until 6 pm half the room rate, subject to availability. Loyalty gold and platinum members get 2 pm free." },
  { category: "services", title: "Laundry and dry cleaning",
    content: "Items handed in before 9 am are returned the same day by 6 pm. Express service within 4 hours costs 50% extra. Self-service machines are on level -1." },
  { category: "services", title: "Housekeeping schedule",
    content: "Rooms are cleaned daily between 9 am and 3 pm. Hang the green card on the door for cleaning at a specific time, or opt out for a drink voucher." },
  { category: "services", title: "Lost and found",
    content: "Items found are kept for 3 months. We can post them to you for the cost of shipping; write to us with a description and your address." },
  { category: "services", title: "Meeting rooms",
    content: "Three meeting rooms for 8 to 60 people with projector and video conferencing. Day packages include coffee breaks and lunch." },
  { category: "services", title: "Accessibility",
    content: "Four rooms are fully accessible with roll-in showers. Lifts serve all floors; hearing loops are available at reception and in the meeting rooms." },
  { category: "local-area", title: "Things to do nearby",
    content: "The old town, the city museum and the aquarium are within a 10 minute walk. The concierge sells tickets and can book guided tours." },
  { category: "local-area", title: "Pharmacy and doctor",
    content: "A pharmacy is 200 m to the left of the entrance, open until 8 pm. Reception can call a doctor to the hotel at any time." },
  { category: "local-area", title: "Shopping",
    content: "The main shopping street starts at the end of our road. Most shops are open 10 am to 8 pm and closed on Sundays." },
];

/** Qualifiers that turn one base article into several distinct ones when more are asked for. */
export const ARTICLE_VARIANTS = [
  'Garden Wing',
  'Tower Wing',
  'Summer season',
  'Winter season',
  'Groups',
  'Long stays',
  'Weekends',
  'Public holidays',
];
