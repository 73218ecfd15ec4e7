// Owns generating the guest-facing demo rows: guests (with guest_tags), conversations and their
// messages, each streamed into the bulk writer without reading anything back.
import { toJson } from '../db/store.js';
import { newId } from '../lib/ids.js';
import { EMAIL_DOMAINS, FIRST_NAMES, GUEST_NOTES, GUEST_TAGS, LAST_NAMES, PHONE_PLANS, TIMES } from './seed-data.js';
import { TOPICS } from './seed-topics.js';
import type { BulkWriter } from './seed-writer.js';
import { Progress } from './seed-writer.js';

export const MIN = 60_000;
export const HOUR = 60 * MIN;
export const DAY = 24 * HOUR;
export const iso = (ms: number) => new Date(ms).toISOString();
export const rnd = Math.random;
export const int = (n: number) => Math.floor(rnd() * n);
export const pick = <T>(a: readonly T[]): T => a[int(a.length)]!;
const ascii = (s: string) =>
  s
    .normalize('NFD')
    .replace(/[^A-Za-z]/g, '')
    .toLowerCase();
export const fill = (tpl: string, vars: Record<string, string>) =>
  tpl.replace(/\{(\w+)\}/g, (m, k: string) => vars[k] ?? m);

export interface SeedStaff {
  id: string;
  name: string;
  email: string;
  role: 'admin' | 'manager' | 'staff';
  department: string | null;
  created: boolean;
}

/** What later phases need to know about earlier rows, kept in typed arrays to stay small. */
export interface World {
  nowMs: number;
  staff: SeedStaff[];
  guestIds: string[];
  guestFirst: Uint8Array;
  /** bit 1: has an e-mail address, bit 2: has a phone number. */
  guestContact: Uint8Array;
  convIds: string[];
  convCreated: Float64Array;
  convGuest: Int32Array;
  convTopic: Uint8Array;
  /** Index into `staff`, or -1 when unassigned. */
  convAssignee: Int16Array;
  convCount: Int32Array;
  /** Mixed into each conversation's clock so a re-run does not repeat the same rhythm. */
  salt: number;
  /** Conversations and tasks are spread over this many days before now. */
  days: number;
}

export interface PhaseResult {
  rows: number;
  ms: number;
  extraRows?: number;
}

/**
 * The message times of conversation `i`, written into `out`: drawn from a generator seeded by `i`
 * so the conversation phase (which needs the last one) and the message phase agree without
 * keeping millions of timestamps in memory. Strictly increasing, never in the future.
 */
function messageTimes(world: World, i: number, out: Float64Array, k: number): void {
  let s = (i ^ world.salt) >>> 0;
  // mulberry32: a few integer operations, and repeatable from the seed, which Math.random is not.
  const next = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  let t = world.convCreated[i]!;
  for (let j = 0; j < k; j++) {
    if (j > 0) {
      const r = next();
      t += r < 0.7 ? MIN + next() * 29 * MIN : r < 0.95 ? 30 * MIN + next() * 6 * HOUR : 6 * HOUR + next() * 2 * DAY;
    }
    out[j] = Math.floor(Math.min(t, world.nowMs - (k - j)));
  }
}

/** Spreads `total` messages over `conversations`: at least one each when there are enough, some busy ones. */
export function messageCounts(conversations: number, total: number): Int32Array {
  const counts = new Int32Array(conversations);
  if (conversations === 0) return counts;
  if (total < conversations) {
    let left = total;
    for (let i = 0; i < conversations && left > 0; i++) {
      if (rnd() * (conversations - i) < left) {
        counts[i] = 1;
        left--;
      }
    }
    return counts;
  }
  counts.fill(1);
  let left = total - conversations;
  while (left > 0) {
    const k = Math.min(left, 1 + Math.floor(rnd() * rnd() * 12));
    const i = int(conversations);
    counts[i] = counts[i]! + k;
    left -= k;
  }
  return counts;
}

/**
 * A bijection on [0, 10^digits) (the multiplier is odd and not a multiple of 5, so coprime with
 * 10^digits): sequential numbers come out looking random but never repeat. seq < 10^8 keeps the
 * product below 2^53.
 */
const scramble = (seq: number, digits: number) =>
  String((seq * 61_803_399 + 271_828_182) % 10 ** digits).padStart(digits, '0');

const PLAN_WEIGHT = PHONE_PLANS.reduce((a, p) => a + p.weight, 0);
function phoneFor(seq: number): string {
  let r = rnd() * PLAN_WEIGHT;
  let plan = PHONE_PLANS[0]!;
  for (const p of PHONE_PLANS) {
    plan = p;
    r -= p.weight;
    if (r < 0) break;
  }
  return `+${plan.cc}${plan.prefix}${scramble(seq, plan.digits)}`;
}

const GUEST_COLUMNS = 'id name email email_lower phone tags notes search_text created_at updated_at';

/** Guests with e-mail and phone numbered from `seqStart` (the guests already stored), so re-runs stay unique. */
export async function seedGuests(w: BulkWriter, world: World, n: number, seqStart: number, batch: number) {
  const guests = w.sink('guests', GUEST_COLUMNS, batch);
  const tags = w.sink('guest_tags', 'guest_id tag guest_created_at', batch);
  const progress = new Progress('guests', n);
  const from = world.nowMs - 730 * DAY;
  const span = 639 * DAY; // all guests exist before the 90 days of conversations
  world.guestIds = new Array(n);
  world.guestFirst = new Uint8Array(n);
  world.guestContact = new Uint8Array(n);
  const produce = (start: number, count: number) => {
    for (let i = start; i < start + count; i++) {
      const seq = seqStart + i;
      const fi = int(FIRST_NAMES.length);
      const first = FIRST_NAMES[fi]!;
      const last = pick(LAST_NAMES);
      const name = `${first} ${last}`;
      const r = rnd();
      const contact = r < 0.08 ? 1 : r < 0.14 ? 2 : 3;
      let email: string | null = null;
      if (contact & 1) {
        const local = `${ascii(first)}.${ascii(last)}${seq}`;
        email = `${rnd() < 0.2 ? local.charAt(0).toUpperCase() + local.slice(1) : local}@${pick(EMAIL_DOMAINS)}`;
      }
      const phone = contact & 2 ? phoneFor(seq) : null;
      const tagCount = r < 0.45 ? 0 : r < 0.75 ? 1 : r < 0.93 ? 2 : 3;
      const guestTags = new Set<string>();
      while (guestTags.size < tagCount) guestTags.add(pick(GUEST_TAGS));
      const id = newId('gst');
      const created = iso(from + ((i + rnd()) * span) / n);
      guests.row(
        id,
        name,
        email,
        email?.toLowerCase() ?? null,
        phone,
        toJson([...guestTags]),
        rnd() < 0.3 ? pick(GUEST_NOTES) : null,
        // Exactly what the guests module writes, so search finds seeded guests the same way.
        `${name} ${email ?? ''} ${phone ?? ''}`.toLowerCase(),
        created,
        created,
      );
      for (const tag of guestTags) tags.row(id, tag, created);
      world.guestIds[i] = id;
      world.guestFirst[i] = fi;
      world.guestContact[i] = contact;
    }
  };
  await w.run(n, guests.rowsPerStatement, produce, [guests, tags], () => progress.update(guests.written));
  return { rows: guests.written, extraRows: tags.written, ms: progress.finish() };
}

const CONVERSATION_COLUMNS =
  'id guest_id channel status assignee subject last_message_at message_count created_at updated_at';

/** Last week's conversations are still being worked on; older ones are mostly closed. */
function conversationStatus(ageMs: number): 'open' | 'pending' | 'closed' {
  const r = rnd();
  if (ageMs > 7 * DAY) return r < 0.93 ? 'closed' : r < 0.97 ? 'pending' : 'open';
  return r < 0.5 ? 'open' : r < 0.7 ? 'pending' : 'closed';
}

/** Staff indexes per department, with the managers as a fallback for any of them. */
export function staffPools(staff: SeedStaff[]) {
  const byDept = new Map<string, number[]>();
  staff.forEach((s, i) => {
    if (s.role === 'staff' && s.department) byDept.set(s.department, [...(byDept.get(s.department) ?? []), i]);
  });
  const managers = staff.flatMap((s, i) => (s.role === 'manager' ? [i] : []));
  const any = staff.map((_, i) => i);
  return (dept: string) => {
    const pool = byDept.get(dept);
    return pool?.length ? (rnd() < 0.85 || managers.length === 0 ? pool : managers) : managers.length ? managers : any;
  };
}

export async function seedConversations(w: BulkWriter, world: World, n: number, messages: number, batch: number) {
  const sink = w.sink('conversations', CONVERSATION_COLUMNS, batch);
  const progress = new Progress('conversations', n);
  const guests = world.guestIds.length;
  const from = world.nowMs - world.days * DAY;
  const span = world.days * DAY - 2 * HOUR;
  const poolFor = staffPools(world.staff);
  world.convIds = new Array(n);
  world.convCreated = new Float64Array(n);
  world.convGuest = new Int32Array(n);
  world.convTopic = new Uint8Array(n);
  world.convAssignee = new Int16Array(n);
  world.convCount = messageCounts(n, messages);
  let times = new Float64Array(64);
  const produce = (start: number, count: number) => {
    for (let i = start; i < start + count; i++) {
      const createdMs = Math.floor(from + ((i + rnd()) * span) / n);
      world.convCreated[i] = createdMs;
      const g = int(guests);
      const contact = world.guestContact[g]!;
      const r = rnd();
      const channel =
        contact === 1 ? (r < 0.75 ? 'email' : 'web') : contact === 2 ? (r < 0.7 ? 'whatsapp' : 'sms') : pick(CHANNELS);
      const ti = int(TOPICS.length);
      const topic = TOPICS[ti]!;
      const status = conversationStatus(world.nowMs - createdMs);
      const assignee = status === 'open' && rnd() < 0.35 ? -1 : rnd() < 0.15 ? -1 : pick(poolFor(topic.department));
      const k = world.convCount[i]!;
      if (times.length < k) times = new Float64Array(k * 2);
      messageTimes(world, i, times, k);
      const last = iso(k > 0 ? times[k - 1]! : createdMs);
      const id = newId('cnv');
      const withSubject = channel === 'email' || channel === 'web' || rnd() < 0.5;
      sink.row(
        id,
        world.guestIds[g],
        channel,
        status,
        assignee < 0 ? null : world.staff[assignee]!.id,
        withSubject ? pick(topic.subjects) : null,
        last,
        k,
        iso(createdMs),
        last,
      );
      world.convIds[i] = id;
      world.convGuest[i] = g;
      world.convTopic[i] = ti;
      world.convAssignee[i] = assignee;
    }
  };
  await w.run(n, sink.rowsPerStatement, produce, [sink], () => progress.update(sink.written));
  return { rows: sink.written, ms: progress.finish() };
}

const CHANNELS = ['whatsapp', 'whatsapp', 'email', 'sms', 'web'] as const;

const MESSAGE_COLUMNS = 'id conversation_id direction type content sender_type sender_id delivery_status created_at';

/** Conversation-shaped threads: the guest opens, staff and guest alternate, now and then an internal note. */
export async function seedMessages(w: BulkWriter, world: World, total: number, batch: number) {
  const sink = w.sink('messages', MESSAGE_COLUMNS, batch);
  const progress = new Progress('messages', total);
  const n = world.convIds.length;
  const poolFor = staffPools(world.staff);
  const perStep = Math.max(1, Math.floor(sink.rowsPerStatement / Math.max(1, total / Math.max(1, n))));
  let times = new Float64Array(64);
  const produce = (start: number, count: number) => {
    for (let i = start; i < start + count; i++) {
      const k = world.convCount[i]!;
      if (k === 0) continue;
      if (times.length < k) times = new Float64Array(k * 2);
      messageTimes(world, i, times, k);
      const topic = TOPICS[world.convTopic[i]!]!;
      const g = world.convGuest[i]!;
      const guestId = world.guestIds[g]!;
      const a = world.convAssignee[i]!;
      const helper = world.staff[a >= 0 ? a : pick(poolFor(topic.department))]!;
      const floor = 1 + (i % 12);
      const vars = {
        name: FIRST_NAMES[world.guestFirst[g]!]!,
        staff: helper.name.split(' ')[0]!,
        room: String(floor * 100 + 1 + ((Math.imul(i, 2654435761) >>> 0) % 40)),
        floor: String(floor),
        time: pick(TIMES),
      };
      const cid = world.convIds[i]!;
      let staffTurn = false;
      let line = int(8);
      // Held until the conversation is done: the guest's last line then becomes a question the
      // knowledge base answers, so its suggestions show something (a closing "thank you" matches
      // no entry). Its first message is already such a question.
      const rows: Parameters<typeof sink.row>[] = [];
      let lastGuestLine = -1;
      for (let j = 0; j < k; j++) {
        const at = iso(times[j]!);
        if (j > 0 && rnd() < 0.06) {
          // A note never reaches the guest: it is stored as delivered to the team, as the API does.
          const text = fill(pick(topic.notes), vars);
          rows.push([newId('msg'), cid, 'outbound', 'note', text, 'staff', helper.id, 'delivered', at]);
        } else if (staffTurn) {
          const text = fill(topic.staffLines[line++ % topic.staffLines.length]!, vars);
          const status = world.nowMs - times[j]! < 10 * MIN || rnd() < 0.05 ? 'sent' : 'delivered';
          rows.push([newId('msg'), cid, 'outbound', 'text', text, 'staff', helper.id, status, at]);
          staffTurn = false;
        } else {
          const text = fill(j === 0 ? pick(topic.openers) : topic.guestLines[line++ % topic.guestLines.length]!, vars);
          if (j > 0) lastGuestLine = rows.length;
          rows.push([newId('msg'), cid, 'inbound', 'text', text, 'guest', guestId, 'received', at]);
          staffTurn = true;
        }
      }
      if (lastGuestLine >= 0) rows[lastGuestLine]![4] = fill(topic.followUps[line % topic.followUps.length]!, vars);
      for (const r of rows) sink.row(...r);
    }
  };
  await w.run(n, perStep, produce, [sink], () => progress.update(sink.written));
  return { rows: sink.written, ms: progress.finish() };
}
