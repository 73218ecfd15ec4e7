// Owns the rows of event stream tickets: writing one, taking one (a use: read and deleted in one
// statement, so of two uses racing only one gets the row, on either store and from any instance),
// and purging the expired ones nobody used.
import type { Executor, StreamTicketTable } from '../../db/types.js';

export type TicketRow = StreamTicketTable;

export async function insertTicket(db: Executor, row: TicketRow): Promise<void> {
  await db.insertInto('stream_tickets').values(row).execute();
}

/** The ticket's row, deleted as it is read; undefined when there is none (unknown or used). */
export function takeTicket(db: Executor, hash: string): Promise<TicketRow | undefined> {
  return db.deleteFrom('stream_tickets').where('hash', '=', hash).returningAll().executeTakeFirst();
}

/** Deletes the tickets that expired before `before`; returns how many. */
export async function purgeTickets(db: Executor, before: Date): Promise<number> {
  const r = await db.deleteFrom('stream_tickets').where('expires_at', '<', before.toISOString()).executeTakeFirst();
  return Number(r.numDeletedRows);
}
