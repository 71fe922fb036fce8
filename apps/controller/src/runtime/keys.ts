/** Work-queue keys, as controller-runtime spells them: "namespace/name", or "name" for cluster-scoped objects. */
import type { KubernetesObject } from "@kubernetes/client-node";

export function objectKey(obj: KubernetesObject): string {
  const ns = obj.metadata?.namespace;
  const name = obj.metadata?.name ?? "";
  return ns ? `${ns}/${name}` : name;
}

export function parseKey(key: string): { namespace?: string; name: string } {
  const i = key.indexOf("/");
  return i < 0 ? { name: key } : { namespace: key.slice(0, i), name: key.slice(i + 1) };
}
