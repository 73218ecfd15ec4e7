// Owns the service-level targets of the `sla` setting as moments: when a running target is due and
// when it is at risk (80 % of its time gone), in business time unless the setting says otherwise;
// and the next SLA moments of a conversation or task, which the scheduler of `sla.at_risk`,
// `sla.breached` and `task.overdue` events asks for. Pure: no store, no clock.
import { addBusinessSeconds, type BusinessHours } from './business-time.js';

export type Target = 'first_response' | 'next_response' | 'resolution';
type TargetMinutes = { firstResponseMinutes?: number; nextResponseMinutes?: number; resolutionMinutes?: number };

export interface SlaSetting extends TargetMinutes {
  firstResponseMinutes: number;
  businessHours?: boolean;
  channels?: Record<string, TargetMinutes>;
  taskMinutes: Record<string, number>;
}

export const AT_RISK_SHARE = 0.8;

const KEY: Record<Target, keyof TargetMinutes> = {
  first_response: 'firstResponseMinutes',
  next_response: 'nextResponseMinutes',
  resolution: 'resolutionMinutes',
};

/** A target's minutes for a conversation of `channel`: the channel's entry overrides the top level. */
export function targetMinutes(sla: SlaSetting, channel: string, target: Target): number | null {
  return sla.channels?.[channel]?.[KEY[target]] ?? sla[KEY[target]] ?? null;
}

export interface Due {
  due: number;
  risk: number;
}

/** When a target of `minutes` started at `start` (ms) is due and at risk; null if never. */
export function dueOf(sla: SlaSetting, hours: BusinessHours, start: number, minutes: number | null): Due | null {
  if (minutes === null) return null;
  if (sla.businessHours === false)
    return { due: start + minutes * 60_000, risk: start + AT_RISK_SHARE * minutes * 60_000 };
  const due = addBusinessSeconds(hours, start, minutes * 60);
  const risk = addBusinessSeconds(hours, start, AT_RISK_SHARE * minutes * 60);
  return due === null || risk === null ? null : { due, risk };
}

/** A task's deadline: its dueAt, or its creation plus the priority's minutes. */
export function taskDeadline(
  sla: SlaSetting,
  hours: BusinessHours,
  t: { createdAt: number; dueAt: number | null; priority: string },
): number | null {
  if (t.dueAt !== null) return t.dueAt;
  return dueOf(sla, hours, t.createdAt, sla.taskMinutes[t.priority] ?? null)?.due ?? null;
}

export interface ConversationSla {
  responseTarget: 'first_response' | 'next_response' | null;
  responseDue: number | null;
  responseRisk: number | null;
  resolutionDue: number | null;
  resolutionRisk: number | null;
  /** A target was missed since the conversation was last opened (recorded at a reply or close). */
  breached: boolean;
}

export type SlaStatus = 'ok' | 'at_risk' | 'breached';

/** The conversation's SLA status at `now`: derived from its running due times and its flag. */
export function slaStatus(s: ConversationSla, now: number): SlaStatus {
  const dues = [s.responseDue, s.resolutionDue].filter((d): d is number => d !== null);
  if (s.breached || dues.some((d) => d <= now)) return 'breached';
  const risks = [s.responseRisk, s.resolutionRisk].filter((d): d is number => d !== null);
  return risks.some((r) => r <= now) ? 'at_risk' : 'ok';
}

export interface SlaMoment {
  kind: 'sla.at_risk' | 'sla.breached';
  target: Target;
  at: number;
  dueAt: number;
}

/** Every SLA moment of the conversation still ahead of `after`, in time order (at_risk first on ties). */
export function nextConversationMoments(s: ConversationSla, after: number): SlaMoment[] {
  const out: SlaMoment[] = [];
  const add = (target: Target, due: number | null, risk: number | null) => {
    if (due === null) return;
    if (risk !== null && risk > after) out.push({ kind: 'sla.at_risk', target, at: risk, dueAt: due });
    if (due > after) out.push({ kind: 'sla.breached', target, at: due, dueAt: due });
  };
  if (s.responseTarget !== null) add(s.responseTarget, s.responseDue, s.responseRisk);
  add('resolution', s.resolutionDue, s.resolutionRisk);
  return out.sort((a, b) => a.at - b.at || (a.kind === 'sla.at_risk' ? -1 : 1));
}

/** When `task.overdue` is due for a task, or null: not before its deadline, never once done. */
export function taskOverdueMoment(t: { deadline: number | null; status: string }, after: number): number | null {
  if (t.deadline === null || t.status === 'completed' || t.status === 'cancelled') return null;
  return t.deadline > after ? t.deadline : null;
}

export interface SlaView {
  firstResponseDueAt: string | null;
  nextResponseDueAt: string | null;
  resolutionDueAt: string | null;
  status: SlaStatus;
}

type Stamp = string | Date | null | undefined;
const msOf = (v: Stamp) => (v === null || v === undefined ? null : new Date(v).getTime());
const isoOf = (v: number | null) => (v === null ? null : new Date(v).toISOString());

/** The columns of a conversation row that hold its running targets (migration 025), as slaOfRow reads them. */
export const SLA_COLUMNS = [
  'sla_target',
  'sla_response_due',
  'sla_response_risk',
  'sla_resolution_due',
  'sla_resolution_risk',
] as const;
/** SLA_COLUMNS of the conversation aliased `c`. */
export const SLA_COLUMNS_OF_C = SLA_COLUMNS.map((column) => `c.${column}` as const);

/** A conversation row's SLA columns (migration 025). */
export interface SlaColumns {
  sla_target?: string | null;
  sla_response_due?: Stamp;
  sla_response_risk?: Stamp;
  sla_resolution_due?: Stamp;
  sla_resolution_risk?: Stamp;
  sla_breached?: number | boolean;
}

/** The running targets a conversation row holds: what nextConversationMoments and slaStatus read. */
export function slaOfRow(row: SlaColumns): ConversationSla {
  return {
    responseTarget: (row.sla_target ?? null) as ConversationSla['responseTarget'],
    responseDue: msOf(row.sla_response_due),
    responseRisk: msOf(row.sla_response_risk),
    resolutionDue: msOf(row.sla_resolution_due),
    resolutionRisk: msOf(row.sla_resolution_risk),
    breached: Boolean(row.sla_breached),
  };
}

/** A conversation row's `sla` field at `now`: null when no target runs and none was missed. */
export function slaView(row: SlaColumns, now = Date.now()): SlaView | null {
  const s = slaOfRow(row);
  if (s.responseDue === null && s.resolutionDue === null && !s.breached) return null;
  return {
    firstResponseDueAt: s.responseTarget === 'first_response' ? isoOf(s.responseDue) : null,
    nextResponseDueAt: s.responseTarget === 'next_response' ? isoOf(s.responseDue) : null,
    resolutionDueAt: isoOf(s.resolutionDue),
    status: slaStatus(s, now),
  };
}
