// Owns generating the operational demo rows: tasks (some following up a conversation or a guest)
// and knowledge entries.
import { newId } from '../lib/ids.js';
import { DEFAULT_DEPARTMENTS } from '../modules/settings/registry.js';
import { ARTICLE_VARIANTS, ARTICLES, DEPARTMENT_TASKS, FIRST_NAMES, TASK_NOTES, TIMES } from './seed-data.js';
import { DAY, fill, HOUR, int, iso, MIN, pick, rnd, staffPools, type World } from './seed-generate.js';
import { TOPICS } from './seed-topics.js';
import { type BulkWriter, Progress } from './seed-writer.js';

const TASK_COLUMNS =
  'id title description department priority status guest_id conversation_id assignee notes due_at completed_at created_at updated_at';

const PRIORITIES = ['low', 'normal', 'normal', 'normal', 'normal', 'high', 'high', 'urgent'] as const;
/** How long each priority usually has, as a due date after creation. */
const DUE_AFTER = { low: 48 * HOUR, normal: 8 * HOUR, high: 2 * HOUR, urgent: 30 * MIN } as const;

type TaskStatus = 'open' | 'in_progress' | 'completed' | 'cancelled';

/** Older tasks are mostly done; the last two days still have work open. */
function taskStatus(ageMs: number): TaskStatus {
  const r = rnd();
  if (ageMs > 2 * DAY) return r < 0.75 ? 'completed' : r < 0.82 ? 'cancelled' : r < 0.88 ? 'in_progress' : 'open';
  return r < 0.45 ? 'open' : r < 0.75 ? 'in_progress' : r < 0.97 ? 'completed' : 'cancelled';
}

export async function seedTasks(w: BulkWriter, world: World, n: number, batch: number) {
  const sink = w.sink('tasks', TASK_COLUMNS, batch);
  const progress = new Progress('tasks', n);
  const from = world.nowMs - world.days * DAY;
  const span = world.days * DAY - HOUR;
  const conversations = world.convIds.length;
  const guests = world.guestIds.length;
  const poolFor = staffPools(world.staff);
  const produce = (start: number, count: number) => {
    for (let i = start; i < start + count; i++) {
      let createdMs = from + ((i + rnd()) * span) / n;
      let department = pick(DEFAULT_DEPARTMENTS);
      let title = pick(DEPARTMENT_TASKS[department] ?? ['Follow up']);
      let description: string | null = rnd() < 0.4 ? 'Check the handover notes for details.' : null;
      let guest = -1;
      let conversation = -1;
      const link = rnd();
      if (link < 0.45 && conversations > 0) {
        // A follow-up of a conversation from about the same time, so it is created after it.
        const near = Math.min(conversations - 1, Math.floor(((i + rnd()) / n) * conversations));
        conversation = near - int(Math.min(20, near + 1));
        const topic = TOPICS[world.convTopic[conversation]!]!;
        department = topic.department;
        title = pick(topic.tasks);
        guest = world.convGuest[conversation]!;
        createdMs = Math.max(createdMs, world.convCreated[conversation]! + 2 * MIN + rnd() * HOUR);
        description = 'Requested by the guest in a conversation; reply there when done.';
      } else if (link < 0.65 && guests > 0) {
        guest = int(guests);
      }
      createdMs = Math.floor(Math.min(createdMs, world.nowMs - MIN));
      const room = String((1 + int(12)) * 100 + 1 + int(40));
      const vars = {
        room,
        floor: room.slice(0, -2),
        time: pick(TIMES),
        name: guest >= 0 ? FIRST_NAMES[world.guestFirst[guest]!]! : 'the guest',
        staff: '',
      };
      const priority = pick(PRIORITIES);
      const status = taskStatus(world.nowMs - createdMs);
      const dueMs = rnd() < 0.8 ? createdMs + DUE_AFTER[priority] * (0.5 + rnd()) : null;
      const completedMs =
        status === 'completed' ? createdMs + Math.min(world.nowMs - createdMs, 5 * MIN + rnd() * 2 * DAY) : null;
      const touchedMs =
        completedMs ??
        (status === 'open' ? createdMs : createdMs + rnd() * Math.min(world.nowMs - createdMs, 6 * HOUR));
      const assignee = status === 'open' && rnd() < 0.3 ? null : world.staff[pick(poolFor(department))]!.id;
      sink.row(
        newId('tsk'),
        fill(title, vars),
        description,
        department,
        priority,
        status,
        guest >= 0 ? world.guestIds[guest] : null,
        conversation >= 0 ? world.convIds[conversation] : null,
        assignee,
        status === 'completed' && rnd() < 0.3 ? pick(TASK_NOTES) : null,
        dueMs === null ? null : iso(dueMs),
        completedMs === null ? null : iso(completedMs),
        iso(createdMs),
        iso(Math.floor(touchedMs)),
      );
    }
  };
  await w.run(n, sink.rowsPerStatement, produce, [sink], () => progress.update(sink.written));
  return { rows: sink.written, ms: progress.finish() };
}

/** The base articles first; beyond them, variants per wing, season or guest type. */
export async function seedKnowledge(w: BulkWriter, world: World, n: number, batch: number) {
  const sink = w.sink('knowledge_entries', 'id title content category created_at updated_at', batch);
  const progress = new Progress('knowledge', n);
  const from = world.nowMs - 365 * DAY;
  const produce = (start: number, count: number) => {
    for (let i = start; i < start + count; i++) {
      const base = ARTICLES[i % ARTICLES.length]!;
      const round = Math.floor(i / ARTICLES.length);
      let { title, content } = base;
      if (round > 0) {
        const variant = ARTICLE_VARIANTS[(round - 1) % ARTICLE_VARIANTS.length]!;
        const edition = Math.floor((round - 1) / ARTICLE_VARIANTS.length);
        title = `${title} (${variant}${edition > 0 ? ` ${edition + 1}` : ''})`;
        content = `${content} For the ${variant.toLowerCase()}, ask reception about any differences.`;
      }
      const created = from + ((i + rnd()) * 300 * DAY) / n;
      const updated = rnd() < 0.3 ? created + rnd() * (world.nowMs - created) : created;
      sink.row(newId('kb'), title, content, base.category, iso(Math.floor(created)), iso(Math.floor(updated)));
    }
  };
  await w.run(n, sink.rowsPerStatement, produce, [sink], () => progress.update(sink.written));
  return { rows: sink.written, ms: progress.finish() };
}
