import { stringifyEntityRef, type Entity } from "@backstage/catalog-model";
import type { LoggerService } from "@backstage/backend-plugin-api";
import type { DeferredEntity, EntityProvider, EntityProviderConnection } from "@backstage/plugin-catalog-node";
import type { BerthClient } from "../client.js";
import { fleetEntities } from "./entities.js";

/**
 * Every Berth team in the catalog (entities.ts says which entities). A full refresh on a schedule replaces the
 * provider's whole set (the catalog drops what Berth no longer has); between them a cheap poll asks
 * GET /v1/status with If-None-Match, which answers 304 while neither the Flux repo nor any team's status has
 * changed, and on a change applies only the entities that differ.
 */
export class BerthEntityProvider implements EntityProvider {
  private connection: EntityProviderConnection | undefined;
  private etag: string | undefined;
  /** What the catalog holds from this provider: entity ref → the entity as JSON. */
  private applied = new Map<string, string>();

  constructor(
    private readonly berth: BerthClient,
    private readonly logger: LoggerService,
    private readonly origin: string,
  ) {}

  getProviderName(): string {
    return "berth";
  }

  async connect(connection: EntityProviderConnection): Promise<void> {
    this.connection = connection;
  }

  /** Every team, as one full mutation. */
  async fullRefresh(signal?: AbortSignal): Promise<void> {
    const connection = this.connected();
    // Without an ETag, Berth always answers in full.
    const read = await this.read(undefined, signal);
    if (!read) throw new Error("Berth answered 304 to a request without If-None-Match");
    const { entities, etag } = read;
    await connection.applyMutation({ type: "full", entities: entities.map((e) => this.deferred(e)) });
    this.applied = byRef(entities);
    this.etag = etag;
    this.logger.info(`Berth catalog: ${entities.length} entities (full refresh)`);
  }

  /** The cheap poll: nothing when Berth answers 304, else only the entities added, changed or gone. */
  async refreshIfChanged(signal?: AbortSignal): Promise<void> {
    if (this.etag === undefined) return this.fullRefresh(signal);
    const connection = this.connected();
    const changed = await this.read(this.etag, signal);
    if (!changed) return;
    const next = byRef(changed.entities);
    const added = changed.entities.filter((e) => this.applied.get(stringifyEntityRef(e)) !== JSON.stringify(e));
    const removed = [...this.applied.keys()].filter((ref) => !next.has(ref));
    if (added.length || removed.length)
      await connection.applyMutation({
        type: "delta",
        added: added.map((e) => this.deferred(e)),
        removed: removed.map((entityRef) => ({ entityRef, locationKey: this.locationKey() })),
      });
    this.applied = next;
    this.etag = changed.etag;
    this.logger.info(`Berth catalog: ${added.length} entities added or changed, ${removed.length} removed`);
  }

  /** Berth's teams and statuses, or undefined when the fleet's ETag still holds. */
  private async read(
    etag: string | undefined,
    signal?: AbortSignal,
  ): Promise<{ entities: Entity[]; etag: string | undefined } | undefined> {
    const status = await this.berth.fleetStatus(etag, signal);
    if (!status) return undefined;
    const { items, broken } = await this.berth.allTeams(signal);
    for (const b of broken) this.logger.warn(`Berth cannot read team ${b.team}, left out of the catalog: ${b.error}`);
    const entities = fleetEntities(items, status.fleet.teams, {
      teamPage: (team) => this.berth.teamPageUrl(team),
      origin: this.origin,
    });
    return { entities, etag: status.etag };
  }

  private deferred(entity: Entity): DeferredEntity {
    return { entity, locationKey: this.locationKey() };
  }

  /** One key for every entity: no other provider or location may claim Berth's. */
  private locationKey(): string {
    return `berth:${this.origin}`;
  }

  private connected(): EntityProviderConnection {
    if (!this.connection) throw new Error("the Berth entity provider is not connected to the catalog yet");
    return this.connection;
  }
}

function byRef(entities: Entity[]): Map<string, string> {
  return new Map(entities.map((e) => [stringifyEntityRef(e), JSON.stringify(e)]));
}
