// Owns the settings keys: each known key's value schema, default and extra checks, and the rule
// for `custom.<name>` keys (any JSON value up to 64 KiB).
import { type TSchema, Type } from 'typebox';
import type { FieldError } from '../../lib/errors.js';
import { templateProblems, type WhatsAppTemplate } from '../channels/templates.js';
import { type Journey, JourneysSchema, journeyProblems } from '../stays/journeys.js';

const MAX_CUSTOM_BYTES = 64 * 1024;
export const CUSTOM_KEY = /^custom\.[A-Za-z0-9_.-]{1,64}$/;
/** At most this many custom keys are stored, so GET /settings stays bounded (100 × 64 KiB). */
export const MAX_CUSTOM_KEYS = 100;

const isTimeZone = (tz: string) => {
  try {
    new Intl.DateTimeFormat('en', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
};
const isLocale = (l: string) => {
  try {
    return Intl.getCanonicalLocales(l).length === 1;
  } catch {
    return false;
  }
};

const HHMM = Type.String({
  pattern: '^([01]\\d|2[0-3]):[0-5]\\d$',
  'x-pattern-message': 'must be a time HH:MM on the 24-hour clock, like 09:30',
  maxLength: 5,
  description: 'HH:MM, 24-hour',
});
const CLOSE = Type.String({
  pattern: '^(([01]\\d|2[0-3]):[0-5]\\d|24:00)$',
  'x-pattern-message': 'must be a time HH:MM on the 24-hour clock, like 18:00, or 24:00 for midnight',
  maxLength: 5,
  description: 'HH:MM, 24-hour; 24:00 is the end of the day',
});
const Interval = Type.Object({ open: HHMM, close: CLOSE }, { additionalProperties: false });
const DAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;
/** SLA minutes: fractional allowed (0.1 is 6 s), up to a year. */
const SlaMinutes = Type.Number({ exclusiveMinimum: 0, maximum: 525600 });
const ChannelTargets = Type.Object(
  {
    firstResponseMinutes: Type.Optional(SlaMinutes),
    nextResponseMinutes: Type.Optional(SlaMinutes),
    resolutionMinutes: Type.Optional(SlaMinutes),
  },
  { additionalProperties: false },
);

export interface KeyDef {
  schema: TSchema;
  default: unknown;
  /** Checks JSON Schema cannot express; returns problems found. */
  check?: (value: never) => FieldError[];
  description: string;
}

export const DEFAULT_DEPARTMENTS = ['housekeeping', 'front-desk', 'maintenance', 'concierge', 'food-and-beverage'];

const DEPARTMENT_PATTERN = '^[a-z0-9][a-z0-9-]*$';

/**
 * A department a request body names. Which ones exist is the `departments` setting, read with
 * each request (so it is said in words); the pattern every entry of that setting has is checked
 * by validation.
 */
export const DepartmentInput = Type.String({
  minLength: 1,
  maxLength: 50,
  pattern: DEPARTMENT_PATTERN,
  'x-pattern-message': 'must be a department of the departments setting (lowercase letters, digits and -)',
  description:
    'One of the departments the `departments` setting lists (GET /settings/departments; by default ' +
    `${DEFAULT_DEPARTMENTS.join(', ')}); any other is 400 VALIDATION_ERROR`,
  examples: ['housekeeping'],
});

/** A department to filter a list by: one naming no department of the setting finds nothing. */
export const DepartmentFilter = Type.String({
  minLength: 1,
  maxLength: 50,
  description: 'Only those of this department (one the `departments` setting lists)',
});

export const SETTINGS: Record<string, KeyDef> = {
  hotel: {
    description: 'The hotel: name, IANA time zone, locale, and the local check-in and check-out times of stays.',
    schema: Type.Object(
      {
        name: Type.String({ minLength: 1, maxLength: 200 }),
        timezone: Type.String({ minLength: 1, maxLength: 64 }),
        locale: Type.String({ minLength: 2, maxLength: 35 }),
        checkInTime: Type.Optional({
          ...HHMM,
          description: 'When a stay begins on its checkIn day, local time (default 15:00)',
        }),
        checkOutTime: Type.Optional({
          ...HHMM,
          description: 'When a stay ends on its checkOut day, local time (default 11:00)',
        }),
      },
      { additionalProperties: false },
    ),
    default: { name: 'My Hotel', timezone: 'UTC', locale: 'en', checkInTime: '15:00', checkOutTime: '11:00' },
    check: (v: { timezone: string; locale: string }) => [
      ...(isTimeZone(v.timezone) ? [] : [{ field: 'value.timezone', message: 'is not an IANA time zone' }]),
      ...(isLocale(v.locale) ? [] : [{ field: 'value.locale', message: 'is not a BCP 47 locale' }]),
    ],
  },
  departments: {
    description: 'Department names that tasks and staff may use.',
    schema: Type.Array(
      Type.String({
        minLength: 1,
        maxLength: 50,
        pattern: DEPARTMENT_PATTERN,
        'x-pattern-message': 'must be lowercase letters, digits and -, starting with a letter or digit',
      }),
      {
        minItems: 1,
        maxItems: 100,
        uniqueItems: true,
      },
    ),
    default: DEFAULT_DEPARTMENTS,
  },
  business_hours: {
    description: 'Opening hours per weekday in a time zone; a day with no intervals is closed.',
    schema: Type.Object(
      {
        timezone: Type.String({ minLength: 1, maxLength: 64 }),
        days: Type.Object(Object.fromEntries(DAYS.map((d) => [d, Type.Array(Interval, { maxItems: 10 })])), {
          additionalProperties: false,
          required: [...DAYS],
        }),
      },
      { additionalProperties: false },
    ),
    default: {
      timezone: 'UTC',
      days: Object.fromEntries(DAYS.map((d) => [d, [{ open: '00:00', close: '24:00' }]])),
    },
    check: (v: { timezone: string; days: Record<string, { open: string; close: string }[]> }) => {
      const out: FieldError[] = [];
      if (!isTimeZone(v.timezone)) out.push({ field: 'value.timezone', message: 'is not an IANA time zone' });
      for (const d of DAYS) {
        (v.days[d] ?? []).forEach((iv, i) => {
          if (iv.close <= iv.open) out.push({ field: `value.days.${d}.${i}`, message: 'close must be after open' });
        });
      }
      return out;
    },
  },
  auto_reply: {
    description: 'An automatic reply to inbound guest messages.',
    schema: Type.Object(
      { enabled: Type.Boolean(), message: Type.String({ minLength: 1, maxLength: 1000 }) },
      { additionalProperties: false },
    ),
    default: { enabled: false, message: 'Thank you for your message. We will reply shortly.' },
  },
  whatsapp_templates: {
    description:
      'WhatsApp message templates as approved at Meta, which may be sent outside the 24-hour window: ' +
      'name, language (like en_US) and body with {{1}}, {{2}} … placeholders.',
    schema: Type.Array(
      Type.Object(
        {
          name: Type.String({
            pattern: '^[a-z0-9_]{1,512}$',
            'x-pattern-message': "must be Meta's template name: lowercase letters, digits and _",
            maxLength: 512,
            description: "Meta's template name",
          }),
          language: Type.String({
            pattern: '^[a-z]{2,3}(_[A-Z]{2})?$',
            'x-pattern-message': 'must be a language code like en or en_US',
            maxLength: 6,
            examples: ['en_US'],
          }),
          body: Type.String({ minLength: 1, maxLength: 1024 }),
        },
        { additionalProperties: false },
      ),
      { maxItems: 200 },
    ),
    default: [],
    check: (v: WhatsAppTemplate[]) => templateProblems(v),
  },
  labels: {
    description:
      'The conversation labels staff may set: when it lists labels, any other is refused (compared ' +
      'lower-cased); empty (the default) allows any label.',
    schema: Type.Array(
      Type.String({
        minLength: 1,
        maxLength: 50,
        pattern: '^[^,\\u0000]*[^,\\u0000\\s][^,\\u0000]*$',
        'x-pattern-message': 'must not be blank or contain a comma (the label filter separates labels with commas)',
      }),
      { maxItems: 500, uniqueItems: true },
    ),
    default: [],
  },
  sla: {
    description:
      'Service levels (docs/reports.md): minutes to the first response, to each later response and to ' +
      'resolution, per channel if need be, and to complete a task by priority; in business hours unless ' +
      'businessHours is false. Changes apply to waits and tasks that start afterwards.',
    schema: Type.Object(
      {
        firstResponseMinutes: SlaMinutes,
        nextResponseMinutes: Type.Optional(SlaMinutes),
        resolutionMinutes: Type.Optional(SlaMinutes),
        businessHours: Type.Optional(
          Type.Boolean({ description: 'Targets count business time (true, the default) or wall time (false)' }),
        ),
        channels: Type.Optional(
          Type.Object(
            {
              whatsapp: Type.Optional(ChannelTargets),
              sms: Type.Optional(ChannelTargets),
              email: Type.Optional(ChannelTargets),
              web: Type.Optional(ChannelTargets),
            },
            { additionalProperties: false },
          ),
        ),
        taskMinutes: Type.Object(
          { low: SlaMinutes, normal: SlaMinutes, high: SlaMinutes, urgent: SlaMinutes },
          { additionalProperties: false },
        ),
      },
      { additionalProperties: false },
    ),
    default: { firstResponseMinutes: 15, taskMinutes: { low: 1440, normal: 240, high: 60, urgent: 15 } },
  },
  journeys: {
    description:
      'Steps sent or created around each stay (docs/stays.md, Journeys): at most 50 { name, enabled, when: ' +
      '{ event, offsetMinutes, at }, channel, action }; texts may use {{guest.name}}, {{guest.firstName}}, ' +
      '{{stay.room}}, {{stay.checkIn}}, {{stay.checkOut}} and {{hotel.name}}.',
    schema: JourneysSchema,
    default: [],
    check: (v: Journey[]) => journeyProblems(v),
  },
};

/** Every key a setting may have: a known key, or custom.<name>. */
export const KEY_PATTERN = `^(${Object.keys(SETTINGS).join('|')}|${CUSTOM_KEY.source.slice(1, -1)})$`;

export const isKnownKey = (key: string): boolean => Object.hasOwn(SETTINGS, key) || CUSTOM_KEY.test(key);

export function customValueProblems(value: unknown): FieldError[] {
  const bytes = Buffer.byteLength(JSON.stringify(value) ?? '');
  return bytes > MAX_CUSTOM_BYTES
    ? [{ field: 'value', message: `must be at most ${MAX_CUSTOM_BYTES} bytes as JSON` }]
    : [];
}
