// Owns the stay resource's request and response schemas (docs/stays.md).
import { type Static, Type } from 'typebox';
import { Nullable, PageQuery, RecordId, RefId, RefIdInput } from '../../lib/schemas.js';

export const STAY_STATUSES = ['booked', 'in_house', 'checked_out', 'cancelled', 'no_show'] as const;
export const StayStatus = Type.Enum([...STAY_STATUSES]);
export type StayStatus = Static<typeof StayStatus>;

/** A calendar day; that it exists (no 2026-02-30) is checked by the service, naming the field. */
const Day = (description: string, example: string) =>
  Type.String({
    pattern: '^\\d{4}-\\d{2}-\\d{2}$',
    'x-pattern-message': 'must be a date YYYY-MM-DD, like 2026-12-24',
    minLength: 10,
    maxLength: 10,
    description,
    examples: [example],
  });

export const ExternalRef = Type.String({
  minLength: 1,
  maxLength: 100,
  description: "The PMS's own id of the record (a reservation or profile number); unique",
  examples: ['RES-104233'],
});

const Room = Type.String({ minLength: 1, maxLength: 20, examples: ['412'] });
const Notes = Type.String({ maxLength: 5000, examples: ['Late arrival, around 23:00'] });
const Adults = Type.Integer({ format: 'int32', minimum: 1, maximum: 20, default: 1 });
const Children = Type.Integer({ format: 'int32', minimum: 0, maximum: 20, default: 0 });
const Timestamp = Type.String({ format: 'date-time', maxLength: 30 });
/** An answer's date: as stored, never refused, so it carries no pattern. */
const DayOut = (description: string) => Type.String({ maxLength: 10, description, examples: ['2026-11-22'] });

export const Stay = Type.Object(
  {
    id: RecordId('sty'),
    guestId: RefId('gst'),
    room: Nullable(Type.String({ maxLength: 20, examples: ['412'] })),
    checkIn: DayOut('The arrival day (YYYY-MM-DD), in the hotel time zone'),
    checkOut: DayOut('The departure day (YYYY-MM-DD), after checkIn'),
    status: StayStatus,
    adults: Type.Integer({ format: 'int32', minimum: 1, maximum: 20 }),
    children: Type.Integer({ format: 'int32', minimum: 0, maximum: 20 }),
    notes: Nullable(Type.String({ maxLength: 5000 })),
    externalRef: Nullable(Type.String({ maxLength: 100, examples: ['RES-104233'] })),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { $id: 'Stay' },
);
export type StayView = Static<typeof Stay>;

/** A journey's step for one stay (docs/stays.md, Journeys): GET /stays/:id/journey and the journey events. */
export const JourneyStep = Type.Object(
  {
    stayId: RefId('sty'),
    guestId: RefId('gst'),
    journey: Type.String({ maxLength: 100, description: 'The name of the journey in the journeys setting' }),
    event: Type.Enum(['arrival', 'departure', 'check_in', 'check_out']),
    dueAt: Type.String({ format: 'date-time', maxLength: 30, description: 'When the step is (or was) due' }),
    status: Type.Enum(['scheduled', 'done', 'skipped', 'failed']),
    messageId: Nullable(RefId('msg', 'The message the step sent (a message step, done)')),
    taskId: Nullable(RefId('tsk', 'The task the step opened (a task step, done)')),
    reason: Nullable(
      Type.String({ maxLength: 1000, description: 'Why the step was skipped or failed; null otherwise' }),
    ),
  },
  { $id: 'JourneyStep' },
);

/** The stay a guest or conversation shows: in house, else the next booked one, else null. */
export const StaySummary = Nullable(
  Type.Object(
    {
      id: RefId('sty'),
      room: Nullable(Type.String({ maxLength: 20, examples: ['412'] })),
      checkIn: DayOut('The arrival day (YYYY-MM-DD)'),
      checkOut: DayOut('The departure day (YYYY-MM-DD)'),
      status: StayStatus,
    },
    {
      description:
        "The guest's current stay: the one in house, else the booked stay with the earliest checkIn whose " +
        "checkOut is after today in the hotel's time zone, else null",
    },
  ),
);
export type StaySummaryView = Static<typeof StaySummary>;

const guestIdInput = RefIdInput('gst', 'An existing guest id (or give guestExternalRef)');
const guestRefInput = Type.String({
  minLength: 1,
  maxLength: 100,
  description: "The guest's externalRef, instead of guestId: the PMS's own profile id",
  examples: ['PROF-88231'],
});

/** Fields of a stay a client sets, each optional here; the bodies below say which are required. */
const stayFields = {
  guestId: Type.Optional(guestIdInput),
  guestExternalRef: Type.Optional(guestRefInput),
  room: Type.Optional(Nullable(Room)),
  checkIn: Day('The arrival day, in the hotel time zone', '2030-01-10'),
  checkOut: Day('The departure day: after checkIn', '2030-01-13'),
  status: Type.Optional(Type.Enum([...STAY_STATUSES], { default: 'booked' })),
  adults: Type.Optional(Adults),
  children: Type.Optional(Children),
  notes: Type.Optional(Nullable(Notes)),
};

const GUEST_RULE = 'Give the guest as guestId or as guestExternalRef (not both).';

export const CreateStayBody = Type.Object(
  { ...stayFields, externalRef: Type.Optional(Nullable(ExternalRef)) },
  {
    additionalProperties: false,
    description: GUEST_RULE,
    examples: [
      {
        guestId: 'gst_01jd8x3k5q7w9e2r4t6y8v0m1n',
        room: '412',
        checkIn: '2030-01-10',
        checkOut: '2030-01-13',
        adults: 2,
        externalRef: 'RES-104233',
      },
    ],
  },
);
export type CreateStayInput = Static<typeof CreateStayBody>;

/** PUT /stays/by-ref/:externalRef: the whole stay; fields left out take their defaults. */
export const PutStayBody = Type.Object(stayFields, {
  additionalProperties: false,
  description: `${GUEST_RULE} Fields left out take their defaults (status booked, adults 1, children 0, room and notes null).`,
  examples: [{ guestExternalRef: 'PROF-88231', room: '412', checkIn: '2030-01-10', checkOut: '2030-01-14', adults: 2 }],
});
export type PutStayInput = Static<typeof PutStayBody>;

/** An item of POST /stays/bulk: a by-ref upsert with its reference in the item. */
export const BulkStayItem = Type.Object(
  { ...stayFields, externalRef: ExternalRef },
  { additionalProperties: false, description: GUEST_RULE },
);
export type BulkStayInput = Static<typeof BulkStayItem>;

export const UpdateStayBody = Type.Object(
  {
    guestId: Type.Optional(RefIdInput('gst', 'An existing guest id')),
    room: Type.Optional(Nullable(Room)),
    checkIn: Type.Optional(Day('The arrival day', '2030-01-11')),
    checkOut: Type.Optional(Day('The departure day: after checkIn', '2030-01-14')),
    status: Type.Optional(StayStatus),
    adults: Type.Optional(Type.Integer({ format: 'int32', minimum: 1, maximum: 20 })),
    children: Type.Optional(Type.Integer({ format: 'int32', minimum: 0, maximum: 20 })),
    notes: Type.Optional(Nullable(Notes)),
    externalRef: Type.Optional(Nullable(ExternalRef)),
  },
  {
    additionalProperties: false,
    minProperties: 1,
    examples: [{ status: 'in_house', room: '415' }],
  },
);
export type UpdateStayInput = Static<typeof UpdateStayBody>;

export const RefParams = Type.Object({
  externalRef: Type.String({ ...ExternalRef, examples: ['RES-104233'] }),
});

export const ListStaysQuery = Type.Object(
  {
    ...PageQuery,
    guestId: Type.Optional(RefIdInput('gst', 'Only stays of this guest')),
    status: Type.Optional(StayStatus),
    room: Type.Optional(Type.String({ minLength: 1, maxLength: 20, description: 'Only stays in this room' })),
    externalRef: Type.Optional(
      Type.String({ minLength: 1, maxLength: 100, description: 'The stay with exactly this externalRef' }),
    ),
    checkInFrom: Type.Optional(Day('Only stays arriving on or after this day', '2030-01-01')),
    checkInTo: Type.Optional(Day('Only stays arriving on or before this day', '2030-01-31')),
    on: Type.Optional(
      Day(
        'Only stays booked or staying that night: checkIn <= on < checkOut, neither cancelled nor no_show',
        '2030-01-11',
      ),
    ),
  },
  { additionalProperties: false },
);
export type StayFilterQuery = Omit<Static<typeof ListStaysQuery>, 'page' | 'limit' | 'cursor'>;
