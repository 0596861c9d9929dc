import { Inject, Injectable, type NestMiddleware } from '@nestjs/common';
import type { IncomingMessage, ServerResponse } from 'node:http';

/** A part request's place in the line of its upload on this gateway. */
export interface ArrivalTicket {
  /** Resolves once every part of the same upload that arrived earlier has taken its block (or ended). */
  turn: Promise<void>;
  /** Lets the next part go: after taking a block, and in any case when the response closes. */
  leave(): void;
}

/** The longest a part waits for the parts before it: past this it takes its block anyway (order is only a hint). */
const MAX_TURN_WAIT_MS = 5_000;

/**
 * Blocks of an upload are taken in the order its part requests arrived at this gateway, not in the
 * order they got through authentication and the database: a client sending its file front to back
 * with several parts in flight then names blocks in ascending order, and completion joins them
 * without copying a byte. Across gateways no order is promised; completion is correct either way.
 */
@Injectable()
export class PartArrivalOrder {
  private readonly lines = new Map<string, Promise<void>>();

  join(uploadId: string): ArrivalTicket {
    const before = this.lines.get(uploadId) ?? Promise.resolve();
    let leave!: () => void;
    const left = new Promise<void>((resolve) => (leave = resolve));
    const tail = before.then(() => left);
    this.lines.set(uploadId, tail);
    void tail.then(() => {
      if (this.lines.get(uploadId) === tail) this.lines.delete(uploadId);
    });
    return { turn: before, leave };
  }

  /** Runs `take` in the ticket's turn (or at once without one), then lets the next part go. */
  async inTurn<T>(ticket: ArrivalTicket | undefined, take: () => Promise<T>): Promise<T> {
    if (!ticket) return take();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([ticket.turn, new Promise<void>((resolve) => (timer = setTimeout(resolve, MAX_TURN_WAIT_MS)))]);
    clearTimeout(timer);
    try {
      return await take();
    } finally {
      ticket.leave();
    }
  }
}

const ARRIVAL = Symbol('uhp.partArrival');
const PART_PATH = /^\/v1\/uploads\/([^/?]+)\/parts\/?(?:\?|$)/;

export const arrivalOf = (req: IncomingMessage): ArrivalTicket | undefined =>
  (req as IncomingMessage & { [ARRIVAL]?: ArrivalTicket })[ARRIVAL];

/** Gives each part request its ticket the moment it arrives, before anything asynchronous can reorder them. */
@Injectable()
export class PartArrivalMiddleware implements NestMiddleware {
  constructor(@Inject(PartArrivalOrder) private readonly order: PartArrivalOrder) {}

  use(req: IncomingMessage, res: ServerResponse, next: () => void): void {
    // The whole path: a router that mounted this middleware may have cut req.url down to the rest.
    const url = (req as IncomingMessage & { originalUrl?: string }).originalUrl ?? req.url ?? '';
    const match = req.method === 'POST' ? PART_PATH.exec(url) : null;
    if (match) {
      const ticket = this.order.join(decodeURIComponent(match[1]));
      (req as IncomingMessage & { [ARRIVAL]?: ArrivalTicket })[ARRIVAL] = ticket;
      res.once('close', ticket.leave);
    }
    next();
  }
}
