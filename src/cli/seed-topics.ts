// Owns the demo conversation topics: per topic the department, subjects, the lines guests and staff
// write, internal notes and the follow-up task titles.

export interface Topic {
  department: string;
  subjects: string[];
  /** The guest's first message. */
  openers: string[];
  guestLines: string[];
  /** A question the guest asks last in a longer conversation, one the knowledge base answers. */
  followUps: string[];
  staffLines: string[];
  notes: string[];
  tasks: string[];
}

// Placeholders filled per message: {name} guest's first name, {staff} staff's first name, {room}, {floor}, {time}.
export const TOPICS: Topic[] = [
  {
    department: 'front-desk',
    subjects: ['Late checkout request', 'Checkout time', 'Can we stay a bit longer?'],
    openers: [
      'Hi, could we get a late checkout tomorrow? Our flight is only at 7 pm.',
      'Hello! Is a late checkout possible for room {room}?',
      'Good morning, would it be possible to check out at {time} instead of 11?',
    ],
    guestLines: ['That would be perfect, thank you!', 'Is there a charge for that?', 'Great, see you later.'],
    followUps: ['Is there a charge for a late checkout?'],
    staffLines: [
      'Hello {name}, late checkout until {time} is confirmed for room {room}.',
      'Hi {name}, we can offer checkout until 2 pm free of charge as a returning guest.',
      'Of course! I have noted it on your reservation. Enjoy the rest of your stay.',
    ],
    notes: ['Approved late checkout, housekeeping informed.', 'Room {room} blocked until {time}.'],
    tasks: ['Late checkout for room {room} until {time}', 'Update housekeeping plan: room {room} leaves late'],
  },
  {
    department: 'front-desk',
    subjects: ['Early check-in', 'Arriving early', 'Check-in time question'],
    openers: [
      'Hello, we land at 8 am. Is an early check-in possible?',
      'Hi, what time can we check in? We arrive around {time}.',
    ],
    guestLines: ['Can we leave our luggage if the room is not ready?', 'Thanks a lot, that helps.'],
    followUps: ['What time is check-in, and can we leave our luggage before then?'],
    staffLines: [
      'Good morning {name}, check-in starts at 3 pm but we will try to have room {room} ready by {time}.',
      'You are welcome to leave your luggage with us and enjoy breakfast while you wait.',
      'Your room is ready now, welcome!',
    ],
    notes: ['Early arrival, prioritise room {room} for cleaning.'],
    tasks: ['Prepare room {room} for early arrival at {time}', 'Store luggage for {name} on arrival'],
  },
  {
    department: 'housekeeping',
    subjects: ['Extra towels', 'Housekeeping request', 'Room cleaning'],
    openers: [
      'Hi, could we have two extra towels and some more shampoo in room {room}?',
      'Hello, could housekeeping come by at {time}? We are out until then.',
      'Could we get an extra blanket and pillow please?',
    ],
    guestLines: ['Thank you so much!', 'No rush, anytime this afternoon is fine.', 'Got them, thanks!'],
    followUps: ['What time does housekeeping usually come to clean the room?'],
    staffLines: [
      'Hello {name}, our housekeeping team will bring them to room {room} within 15 minutes.',
      'Noted! Housekeeping will come by at {time}.',
      'On their way. Is there anything else we can do for you?',
    ],
    notes: ['Sent {staff} with towels and amenities.'],
    tasks: [
      'Deliver extra towels to room {room}',
      'Extra pillow and blanket for room {room}',
      'Clean room {room} at {time}',
    ],
  },
  {
    department: 'maintenance',
    subjects: ['Air conditioning not working', 'Problem in the room', 'Shower issue'],
    openers: [
      'Hi, the air conditioning in room {room} does not seem to work, it is very warm.',
      'Hello, the shower in our bathroom is dripping and the drain is slow.',
      'The TV remote is not working, could someone have a look?',
    ],
    guestLines: ['Thanks, we are in the room now.', 'It works again, thank you!', 'Still not fixed, unfortunately.'],
    followUps: ['Also, what are the quiet hours? The room next door is very loud.'],
    staffLines: [
      'I am sorry about that, {name}. Our technician is on the way to room {room}.',
      'Thank you for letting us know. Maintenance will be there within 20 minutes.',
      'We can also move you to another room right away if you prefer.',
    ],
    notes: ['Technician {staff} dispatched to room {room}.', 'Parts ordered, follow up tomorrow.'],
    tasks: [
      'Fix air conditioning in room {room}',
      'Repair dripping shower in room {room}',
      'Replace TV remote in room {room}',
    ],
  },
  {
    department: 'concierge',
    subjects: ['Airport transfer', 'Taxi to the airport', 'Transfer booking'],
    openers: [
      'Hello, can you book us a taxi to the airport tomorrow at {time}?',
      'Hi, do you offer an airport shuttle? We are 3 people with 4 suitcases.',
    ],
    guestLines: ['How much does it cost?', 'Perfect, please book it.', 'Thanks, the driver was great.'],
    followUps: ['How much is the airport transfer, and how long does it take?'],
    staffLines: [
      'Hello {name}, a car is booked for {time} and will wait at the main entrance.',
      'The transfer is 65 EUR and can be charged to room {room}.',
      'Confirmed! You will receive the driver details by message.',
    ],
    notes: ['Booked with the usual limousine partner.'],
    tasks: ['Book airport transfer at {time} for room {room}', 'Confirm driver details for {name}'],
  },
  {
    department: 'concierge',
    subjects: ['Restaurant recommendation', 'Dinner reservation', 'Things to do'],
    openers: [
      'Hi, could you recommend a good seafood restaurant nearby and book a table for 2 at {time}?',
      'Hello, what would you recommend for a rainy afternoon with kids?',
    ],
    guestLines: ['Sounds lovely, please book it.', 'Thank you for the tips!'],
    followUps: ['What are the restaurant and bar hours tonight?'],
    staffLines: [
      'Hello {name}, I booked a table for two at {time} at a lovely place by the harbour.',
      'The city museum and the aquarium are both a 10 minute walk away.',
      'Enjoy your evening!',
    ],
    notes: ['Reservation confirmed by phone.'],
    tasks: ['Reserve dinner table for 2 at {time}', 'Print city map and museum tickets for {name}'],
  },
  {
    department: 'food-and-beverage',
    subjects: ['Room service', 'Breakfast question', 'Dietary requirements'],
    openers: [
      'Hello, until what time is breakfast served?',
      'Hi, could we order room service to room {room}? Two club sandwiches please.',
      'Hello, my daughter is allergic to nuts. Can the kitchen take care of that?',
    ],
    guestLines: ['Wonderful, thank you.', 'Could we also get a bottle of sparkling water?', 'Delicious, thanks!'],
    followUps: ['What time is breakfast served, and do you have gluten-free options?'],
    staffLines: [
      'Good morning {name}, breakfast is served from 6:30 to 10:30, weekends until 11.',
      'Your order is on its way to room {room}, about 25 minutes.',
      'Of course, the kitchen has been informed and will prepare nut-free dishes.',
    ],
    notes: ['Allergy noted on the guest profile.'],
    tasks: ['Room service order for room {room}', 'Inform kitchen: nut allergy in room {room}'],
  },
  {
    department: 'food-and-beverage',
    subjects: ['Birthday surprise', 'Special occasion', 'Anniversary'],
    openers: [
      "Hi, it is my wife's birthday tomorrow. Could you arrange a small cake in the room?",
      'Hello, we are celebrating our anniversary. Could you prepare something special?',
    ],
    guestLines: ['Please keep it a surprise!', 'She loved it, thank you so much.'],
    followUps: ['She has a nut allergy: can the restaurant prepare the cake without nuts?'],
    staffLines: [
      'What a lovely idea, {name}! A cake and a card will be in room {room} at {time}.',
      'Happy anniversary! We will place a bottle of prosecco in your room.',
    ],
    notes: ['Surprise set-up, do not mention to the partner.'],
    tasks: ['Deliver birthday cake to room {room} at {time}', 'Prepare anniversary set-up in room {room}'],
  },
  {
    department: 'front-desk',
    subjects: ['Parking', 'Where to park', 'Garage'],
    openers: ['Hi, do you have parking? We arrive by car tomorrow.', 'Hello, where can I park an electric car?'],
    guestLines: ['Do I need to reserve a spot?', 'Great, thanks.'],
    followUps: ['How much is parking per night, and can we charge an electric car?'],
    staffLines: [
      'Hello {name}, our garage is open 24/7 for 25 EUR per night, with two EV chargers.',
      'I reserved a spot for you; just give your plate number at the entrance.',
    ],
    notes: ['Parking spot reserved.'],
    tasks: ['Reserve parking spot for {name}', 'Check EV charger on level -1'],
  },
  {
    department: 'front-desk',
    subjects: ['Invoice request', 'Receipt', 'Billing question'],
    openers: [
      'Hello, could you send me the invoice with my company details?',
      'Hi, I think the minibar was charged twice on my bill.',
    ],
    guestLines: ['The company is Northwind Ltd, VAT number follows by e-mail.', 'Thanks for fixing it.'],
    followUps: ['Which payment methods do you accept?'],
    staffLines: [
      'Hello {name}, the invoice has been sent to your e-mail address.',
      'You are right, I apologise. The double charge has been removed.',
    ],
    notes: ['Refund of minibar charge approved by manager.'],
    tasks: ['Send corrected invoice to {name}', 'Review minibar charges for room {room}'],
  },
  {
    department: 'concierge',
    subjects: ['Spa booking', 'Massage appointment', 'Wellness'],
    openers: ['Hi, could we book two massages for tomorrow at {time}?', 'Hello, is the pool open in the evening?'],
    guestLines: ['Lovely, thank you.', 'Do we need to bring our own towels?'],
    followUps: ['Which spa treatments do you offer, and are there yoga classes?'],
    staffLines: [
      'Hello {name}, two 60-minute massages are booked for {time}.',
      'The pool and sauna are open from 7 am to 10 pm; towels and robes are in your room.',
    ],
    notes: ['Spa booking confirmed with the therapist.'],
    tasks: ['Book couples massage at {time}', 'Bring bathrobes to room {room}'],
  },
  {
    department: 'housekeeping',
    subjects: ['Lost item', 'Forgot something', 'Lost and found'],
    openers: [
      'Hello, I think I left my phone charger in room {room} this morning.',
      'Hi, did you find a blue scarf after our checkout?',
    ],
    guestLines: ['Could you send it to my home address?', 'Thank you, that is a relief!'],
    followUps: ['How long do you keep items in lost and found?'],
    staffLines: [
      'Hello {name}, our housekeeping team found it and it is waiting at reception.',
      'We can post it to you; please send us your address.',
    ],
    notes: ['Item logged in lost and found.'],
    tasks: ['Search room {room} for lost charger', 'Post lost item to {name}'],
  },
  {
    department: 'maintenance',
    subjects: ['Wi-Fi problem', 'Internet connection', 'Cannot connect'],
    openers: ['Hi, the Wi-Fi keeps disconnecting in room {room}.', 'Hello, what is the Wi-Fi password?'],
    guestLines: ['It works now, thanks.', 'Still very slow, unfortunately.'],
    followUps: ['What is the Wi-Fi network and password?'],
    staffLines: [
      'Hello {name}, the network is "Hotel-Guest" and the password is on your key card holder.',
      'We restarted the access point on your floor; could you try again?',
    ],
    notes: ['Access point on floor {floor} restarted.'],
    tasks: ['Check Wi-Fi access point near room {room}'],
  },
  {
    department: 'front-desk',
    subjects: ['Booking change', 'Extend my stay', 'Cancel a night'],
    openers: [
      'Hello, could we extend our stay by one night?',
      'Hi, we need to arrive one day later. Can you change the booking?',
    ],
    guestLines: ['Same room if possible.', 'Perfect, thank you!'],
    followUps: ['What is your cancellation policy if we leave a night early?'],
    staffLines: [
      'Hello {name}, good news: room {room} is available for the extra night.',
      'Your booking has been changed; the confirmation is on its way.',
    ],
    notes: ['Rate for the extra night matched to the original booking.'],
    tasks: ['Extend reservation of room {room} by one night', 'Send updated confirmation to {name}'],
  },
];
