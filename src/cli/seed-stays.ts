// Owns the demo stays (docs/stays.md): a hotel's day for the seeded guests, in the hotel's time
// zone. Guests in turn are in house, arriving today, arriving tomorrow, booked later, cancelled,
// or between stays; every other guest also has a stay in the past, so a demo shows each case.
import { newId } from '../lib/ids.js';
import { int, iso, rnd, type World } from './seed-generate.js';
import { type BulkWriter, Progress } from './seed-writer.js';

const STAY_COLUMNS =
  'id guest_id room check_in check_out status adults children notes external_ref created_at updated_at';

/** `day` (YYYY-MM-DD) moved by `n` days. */
export function addDays(day: string, n: number): string {
  const [y, m, d] = day.split('-').map(Number) as [number, number, number];
  return new Date(Date.UTC(y, m - 1, d + n)).toISOString().slice(0, 10);
}

type Plan = { from: number; nights: number; status: 'booked' | 'in_house' | 'checked_out' | 'cancelled' };

/** The current stay of the i-th guest, by its place in a cycle of ten, or none. */
function currentPlan(i: number): Plan | null {
  switch (i % 10) {
    case 0:
    case 1:
      return { from: -int(4), nights: 2 + int(5), status: 'in_house' };
    case 2:
      return { from: 0, nights: 1 + int(6), status: 'booked' };
    case 3:
      return { from: 1, nights: 1 + int(6), status: 'booked' };
    case 4:
    case 5:
      return { from: 2 + int(60), nights: 1 + int(10), status: 'booked' };
    case 6:
      return { from: 3 + int(30), nights: 1 + int(5), status: 'cancelled' };
    default:
      return null;
  }
}

const NOTES = [
  'Late arrival, around 23:00',
  'Cot in the room',
  'Anniversary: flowers on arrival',
  'Airport transfer booked',
];

/** Stays of the guests seeded in this run (world.guestIds), dated from `today`. */
export async function seedStays(w: BulkWriter, world: World, today: string, batch: number) {
  const guests = world.guestIds.length;
  const sink = w.sink('stays', STAY_COLUMNS, batch);
  const progress = new Progress('stays', guests);
  const now = iso(world.nowMs);
  const room = () => String((1 + int(8)) * 100 + 1 + int(30));
  const row = (guest: string, p: Plan) => {
    const checkIn = addDays(today, p.from);
    const note = rnd() < 0.15 ? NOTES[int(NOTES.length)]! : null;
    sink.row(
      newId('sty'),
      guest,
      p.status === 'cancelled' ? null : room(),
      checkIn,
      addDays(checkIn, p.nights),
      p.status,
      1 + int(2),
      rnd() < 0.2 ? 1 + int(2) : 0,
      note,
      null,
      now,
      now,
    );
  };
  let done = 0;
  const produce = (start: number, count: number) => {
    for (let i = start; i < start + count; i++) {
      const guest = world.guestIds[i]!;
      if (i % 2 === 0) row(guest, { from: -(20 + int(300)), nights: 1 + int(7), status: 'checked_out' });
      const plan = currentPlan(i);
      if (plan !== null) row(guest, plan);
    }
    done = start + count;
  };
  await w.run(guests, sink.rowsPerStatement, produce, [sink], () => progress.update(done));
  return { rows: sink.written, ms: progress.finish() };
}
