/**
 * The name and id shapes every part of Berth checks, defined once. (Tests keep their own independent
 * copies on purpose: an oracle that imports what it checks cannot catch a wrong pattern.)
 */

/** A DNS-1123 label that starts with a letter (namespaces, team and cluster names, ConfigMap names). */
export const DNS_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;

/** A GUID in either case, as Azure returns ids (subscription, tenant, client ids). */
export const GUID = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/** A GUID in lowercase, as Berth writes ids it keeps (Entra group object ids, role definition ids). */
export const LOWERCASE_GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
