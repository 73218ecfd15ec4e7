// Owns journeys as a setting and as a plan (docs/stays.md, Journeys): the `journeys` setting's
// shape and the checks JSON Schema cannot make (unique names, the fields each action needs, only
// known placeholders), and `planStay`, the pure function that says when each step of a stay is
// due. Running the steps is in journey-steps.ts.
import { Type } from 'typebox';
import type { FieldError } from '../../lib/errors.js';

export const JOURNEY_EVENTS = ['arrival', 'departure', 'check_in', 'check_out'] as const;
export type JourneyEvent = (typeof JOURNEY_EVENTS)[number];

/** The placeholders a journey's texts may use; any other is refused when the setting is saved. */
export const PLACEHOLDERS = [
  'guest.name',
  'guest.firstName',
  'stay.room',
  'stay.checkIn',
  'stay.checkOut',
  'hotel.name',
] as const;

export const MAX_JOURNEYS = 50;

/**
 * The job that plans every current and coming stay again (src/modules/stays/journey-steps.ts),
 * written when the `journeys` or `hotel` setting is saved; one live job, key "all".
 */
export const REPLAN_KIND = 'journey.replan';
const MAX_OFFSET = 43_200;

const HHMM = Type.String({
  pattern: '^([01]\\d|2[0-3]):[0-5]\\d$',
  'x-pattern-message': 'must be a time HH:MM on the 24-hour clock, like 10:00',
  maxLength: 5,
});

export const JourneysSchema = Type.Array(
  Type.Object(
    {
      name: Type.String({ minLength: 1, maxLength: 100 }),
      enabled: Type.Optional(Type.Boolean({ default: true })),
      when: Type.Object(
        {
          event: Type.Enum([...JOURNEY_EVENTS]),
          offsetMinutes: Type.Optional(
            Type.Integer({ format: 'int32', minimum: -MAX_OFFSET, maximum: MAX_OFFSET, default: 0 }),
          ),
          at: Type.Optional(HHMM),
        },
        { additionalProperties: false },
      ),
      channel: Type.Optional(Type.Enum(['whatsapp', 'sms', 'email', 'web'])),
      action: Type.Object(
        {
          type: Type.Enum(['message', 'task']),
          content: Type.Optional(Type.String({ minLength: 1, maxLength: 4096 })),
          template: Type.Optional(
            Type.Object(
              {
                name: Type.String({ minLength: 1, maxLength: 512 }),
                language: Type.String({ minLength: 2, maxLength: 6 }),
                parameters: Type.Array(Type.String({ maxLength: 1024 }), { maxItems: 20 }),
              },
              { additionalProperties: false },
            ),
          ),
          title: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
          department: Type.Optional(Type.String({ minLength: 1, maxLength: 50 })),
          priority: Type.Optional(Type.Enum(['low', 'normal', 'high', 'urgent'])),
          description: Type.Optional(Type.String({ maxLength: 5000 })),
        },
        { additionalProperties: false },
      ),
    },
    { additionalProperties: false },
  ),
  { maxItems: MAX_JOURNEYS },
);

export interface Journey {
  name: string;
  enabled?: boolean;
  when: { event: JourneyEvent; offsetMinutes?: number; at?: string };
  channel?: string;
  action: {
    type: 'message' | 'task';
    content?: string;
    template?: { name: string; language: string; parameters: string[] };
    title?: string;
    department?: string;
    priority?: string;
    description?: string;
  };
}

const MESSAGE_FIELDS = ['content', 'template'] as const;
const TASK_FIELDS = ['title', 'department', 'priority', 'description'] as const;

/** Each `{{…}}` in `text` that names no known placeholder. */
function unknownPlaceholders(text: string): string[] {
  const known = PLACEHOLDERS as readonly string[];
  return [...text.matchAll(/\{\{\s*([^}]*?)\s*\}\}/g)].map((m) => m[1]!).filter((p) => !known.includes(p));
}

/** What the schema cannot say of a `journeys` value: every problem, each naming its field. */
export function journeyProblems(journeys: Journey[]): FieldError[] {
  const out: FieldError[] = [];
  const seen = new Set<string>();
  journeys.forEach((j, i) => {
    const at = `value.${i}`;
    if (seen.has(j.name)) out.push({ field: `${at}.name`, message: `${j.name} is the name of an earlier journey` });
    seen.add(j.name);
    const a = j.action;
    const texts: [string, string][] = [];
    if (a.type === 'message') {
      if ((a.content === undefined) === (a.template === undefined)) {
        out.push({ field: `${at}.action`, message: 'a message has either content or template' });
      }
      for (const f of TASK_FIELDS) {
        if (a[f] !== undefined) out.push({ field: `${at}.action.${f}`, message: 'is not a field of a message' });
      }
      if (a.content !== undefined) texts.push([`${at}.action.content`, a.content]);
      a.template?.parameters.forEach((p, k) => {
        texts.push([`${at}.action.template.parameters.${k}`, p]);
      });
    } else {
      if (a.title === undefined) out.push({ field: `${at}.action.title`, message: 'is required for a task' });
      if (a.department === undefined) {
        out.push({ field: `${at}.action.department`, message: 'is required for a task' });
      }
      for (const f of MESSAGE_FIELDS) {
        if (a[f] !== undefined) out.push({ field: `${at}.action.${f}`, message: 'is not a field of a task' });
      }
      if (j.channel !== undefined) out.push({ field: `${at}.channel`, message: 'is for messages; a task has none' });
      if (a.title !== undefined) texts.push([`${at}.action.title`, a.title]);
      if (a.description !== undefined) texts.push([`${at}.action.description`, a.description]);
    }
    for (const [field, text] of texts) {
      for (const p of unknownPlaceholders(text)) {
        out.push({
          field,
          message: `{{${p}}} is not a placeholder: use ${PLACEHOLDERS.map((x) => `{{${x}}}`).join(', ')}`,
        });
      }
    }
  });
  return out;
}

// --- Planning -------------------------------------------------------------------------------

// One formatter per zone, kept: making one is costly and holds native memory, and planning a
// stay asks for several offsets (a burst of stays, or replanning every stay, asks for thousands).
const WALL_FORMATS = new Map<string, Intl.DateTimeFormat>();

function wallFormat(timeZone: string): Intl.DateTimeFormat {
  let f = WALL_FORMATS.get(timeZone);
  if (f === undefined) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    // Zones come from the validated hotel setting: few; the bound only guards the map.
    if (WALL_FORMATS.size >= 100) WALL_FORMATS.clear();
    WALL_FORMATS.set(timeZone, f);
  }
  return f;
}

/** The offset of `timeZone` from UTC at instant `t`, in milliseconds (east positive). */
function offsetAt(timeZone: string, t: number): number {
  const parts = wallFormat(timeZone).formatToParts(new Date(t));
  const v = (type: string) => Number(parts.find((p) => p.type === type)!.value);
  const local = Date.UTC(v('year'), v('month') - 1, v('day'), v('hour'), v('minute'), v('second'));
  return local - Math.floor(t / 1000) * 1000;
}

/**
 * The instant a local wall time names in `timeZone`. A time that happens twice (the hour a clock
 * goes back) is the earlier one; a time that never happens (the hour a clock skips) is read with
 * the offset before the change, so it lands as far past the gap as it was into it (02:30 on a
 * spring-forward night is 03:30): Temporal's "compatible" choice.
 */
export function instantOf(timeZone: string, day: string, time: string): number {
  const [y, m, d] = day.split('-').map(Number) as [number, number, number];
  const [hh, mm] = time.split(':').map(Number) as [number, number];
  const wall = Date.UTC(y, m - 1, d, hh, mm);
  const before = offsetAt(timeZone, wall - 86_400_000);
  const after = offsetAt(timeZone, wall + 86_400_000);
  const fits = [wall - before, wall - after].filter((t) => t + offsetAt(timeZone, t) === wall);
  return fits.length > 0 ? Math.min(...fits) : wall - before;
}

/** The local day (YYYY-MM-DD) of instant `t` in `timeZone`. */
function localDay(timeZone: string, t: number): string {
  return new Date(t + offsetAt(timeZone, t)).toISOString().slice(0, 10);
}

export interface PlanClock {
  timezone: string;
  checkInTime: string;
  checkOutTime: string;
}

export interface PlanStay {
  checkIn: string;
  checkOut: string;
  /** When the stay became in_house and checked_out, if it has (check_in/check_out steps). */
  checkedInAt?: string | null;
  checkedOutAt?: string | null;
}

export interface PlannedStep {
  journey: string;
  event: JourneyEvent;
  dueAt: string;
}

/** The moment a journey's event happens for a stay, or null while it has not (check_in, check_out). */
function eventMoment(stay: PlanStay, clock: PlanClock, event: JourneyEvent): number | null {
  switch (event) {
    case 'arrival':
      return instantOf(clock.timezone, stay.checkIn, clock.checkInTime);
    case 'departure':
      return instantOf(clock.timezone, stay.checkOut, clock.checkOutTime);
    case 'check_in':
      return stay.checkedInAt ? Date.parse(stay.checkedInAt) : null;
    case 'check_out':
      return stay.checkedOutAt ? Date.parse(stay.checkedOutAt) : null;
  }
}

/**
 * When each enabled journey's step of `stay` is due: its event's moment (arrival and departure:
 * the stay's days at the hotel's check-in and check-out times; check_in and check_out: when they
 * happened), shifted by offsetMinutes of elapsed time, then, with `at`, set to that local time of
 * the day reached. Steps whose event has not happened are left out; the result is in due order.
 */
export function planStay(stay: PlanStay, journeys: readonly Journey[], clock: PlanClock): PlannedStep[] {
  const out: PlannedStep[] = [];
  for (const j of journeys) {
    if (j.enabled === false) continue;
    const base = eventMoment(stay, clock, j.when.event);
    if (base === null) continue;
    let due = base + (j.when.offsetMinutes ?? 0) * 60_000;
    if (j.when.at !== undefined) due = instantOf(clock.timezone, localDay(clock.timezone, due), j.when.at);
    out.push({ journey: j.name, event: j.when.event, dueAt: new Date(due).toISOString() });
  }
  return out.sort((a, b) => (a.dueAt < b.dueAt ? -1 : a.dueAt > b.dueAt ? 1 : 0));
}
