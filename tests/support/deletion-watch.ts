/**
 * Records when objects really leave the cluster: a watch per resource, every DELETED event with the time it
 * arrived. (The apiserver's audit log has the DELETE requests; an object with finalizers only goes later, when
 * the last one is released, and that shows only in a watch.)
 */
import { Watch, type KubeConfig } from "@kubernetes/client-node";

export interface Deletion {
  /** The watched path, e.g. /api/v1/secrets. */
  resource: string;
  namespace: string | undefined;
  name: string;
  at: number;
}

export interface DeletionWatch {
  readonly deletions: Deletion[];
  /** When `name` (in `namespace`) left, from the watch of `resource`; undefined while it has not. */
  goneAt(resource: string, name: string, namespace?: string): number | undefined;
  stop(): void;
}

/** Starts one watch per path (cluster-wide list paths such as /api/v1/secrets); resolves once all are open. */
export async function watchDeletions(kc: KubeConfig, resources: string[]): Promise<DeletionWatch> {
  const deletions: Deletion[] = [];
  const watch = new Watch(kc);
  const controllers = await Promise.all(
    resources.map((resource) =>
      watch.watch(
        resource,
        {},
        (type: string, obj: { metadata?: { name?: string; namespace?: string } }) => {
          if (type === "DELETED")
            deletions.push({
              resource,
              namespace: obj.metadata?.namespace,
              name: obj.metadata?.name ?? "",
              at: Date.now(),
            });
        },
        () => undefined,
      ),
    ),
  );
  return {
    deletions,
    goneAt: (resource, name, namespace) =>
      deletions.find(
        (d) => d.resource === resource && d.name === name && (namespace === undefined || d.namespace === namespace),
      )?.at,
    stop: () => {
      for (const c of controllers) c.abort();
    },
  };
}
