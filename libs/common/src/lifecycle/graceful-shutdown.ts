import { Global, Injectable, Module } from '@nestjs/common';

/** A part of the service that has work in flight to finish, or hand back, when the process stops. */
export type DrainStep = (grace: AbortSignal) => Promise<void>;

/**
 * The state of a stopping service, and what must drain before its connections close. On SIGTERM the
 * bootstrap marks it draining (readiness fails at once), runs every registered step with a signal that
 * fires when the grace period ends — a step finishes its work by then, or hands it back and returns —
 * and only after that closes the database, Redis and converters.
 */
@Injectable()
export class GracefulShutdown {
  private draining = false;
  private readonly steps = new Map<string, DrainStep>();

  get isDraining(): boolean {
    return this.draining;
  }

  /** Registers what `name` does on shutdown. */
  onDrain(name: string, step: DrainStep): void {
    this.steps.set(name, step);
  }

  /** Marks the service draining and runs every step; resolves when all have returned. */
  async drain(grace: AbortSignal): Promise<void> {
    this.draining = true;
    await Promise.allSettled([...this.steps.values()].map((step) => step(grace)));
  }

  markDraining(): void {
    this.draining = true;
  }
}

@Global()
@Module({ providers: [GracefulShutdown], exports: [GracefulShutdown] })
export class GracefulShutdownModule {}
