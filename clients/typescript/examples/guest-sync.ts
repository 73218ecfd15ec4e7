// A property-management-system style sync: every guest of the PMS export exists in the API with
// the same e-mail, phone and tags; created when missing, updated when changed, never duplicated.
// Run (from clients/typescript, after npm install): API_URL=http://127.0.0.1:3000 API_EMAIL=… API_PASSWORD=… npx tsx examples/guest-sync.ts
import { ApiError, createGuestApi, type Schemas, unwrap } from '../src/index.js';

interface PmsGuest {
  name: string;
  email: string;
  phone?: string;
  tags: string[];
}

const EXPORT: PmsGuest[] = [
  { name: 'Ana Lopes', email: 'ana.lopes@example.com', phone: '+351912345678', tags: ['vip'] },
  { name: 'Tom Berg', email: 'tom.berg@example.com', tags: ['returning', 'late-checkout'] },
];

const client = createGuestApi({ baseUrl: process.env.API_URL ?? 'http://127.0.0.1:3000' });
await client.login(process.env.API_EMAIL ?? 'admin@example.com', process.env.API_PASSWORD ?? '');

// Index the API's guests by e-mail, walking the whole list by cursor.
const byEmail = new Map<string, Schemas['Guest']>();
for await (const guest of client.items('/api/v1/guests')) {
  if (guest.email !== null) byEmail.set(guest.email.toLowerCase(), guest);
}

for (const g of EXPORT) {
  const existing = byEmail.get(g.email.toLowerCase());
  try {
    if (existing === undefined) {
      const body = { name: g.name, email: g.email, tags: g.tags, ...(g.phone && { phone: g.phone }) };
      const created = unwrap(await client.api.POST('/api/v1/guests', { body }));
      console.log(`created ${created.id} ${created.name}`);
    } else if (existing.tags.join() !== g.tags.join() || existing.name !== g.name) {
      const updated = unwrap(
        await client.api.PATCH('/api/v1/guests/{id}', {
          params: { path: { id: existing.id } },
          body: { name: g.name, tags: g.tags },
        }),
      );
      console.log(`updated ${updated.id} ${updated.name}`);
    }
  } catch (err) {
    // A phone another guest holds is a CONFLICT naming that guest: report it, carry on.
    if (err instanceof ApiError) console.error(`${g.email}: ${err.code} ${err.message}`);
    else throw err;
  }
}
