// Who may use the bot at all (tenant allow-list) and who may administer it (admin AAD object ids).
import type { Config } from '../config.js';
import type { Caller } from './types.js';

export type AccessPolicy = ReturnType<typeof accessPolicy>;

export function accessPolicy(config: Config) {
  const lowerCased = (ids: string[]) => new Set(ids.map((id) => id.toLowerCase()));
  const tenants = lowerCased(config.access.allowedTenantIds);
  const admins = lowerCased(config.access.adminAadObjectIds);
  return {
    /** With no allow-list (local mode only: config requires one with an app id) every tenant is allowed. */
    tenantAllowed: (tenantId: string | undefined): boolean =>
      tenants.size === 0 || (tenantId !== undefined && tenants.has(tenantId.toLowerCase())),
    isAdmin: (caller: Caller): boolean => caller.aadObjectId !== undefined && admins.has(caller.aadObjectId.toLowerCase()),
  };
}
