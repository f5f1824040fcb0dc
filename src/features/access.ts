// Who may use the bot at all (tenant allow-list) and who may administer it (admin AAD object ids).
import type { Config } from '../config.js';
import type { Caller } from './types.js';

export class AccessPolicy {
  private readonly tenants: Set<string>;
  private readonly admins: Set<string>;

  constructor(config: Config) {
    this.tenants = new Set(config.access.allowedTenantIds.map((t) => t.toLowerCase()));
    this.admins = new Set(config.access.adminAadObjectIds.map((t) => t.toLowerCase()));
  }

  /** With no allow-list (local mode only: config requires one with an app id) every tenant is allowed. */
  tenantAllowed(tenantId: string | undefined): boolean {
    if (this.tenants.size === 0) return true;
    return tenantId !== undefined && this.tenants.has(tenantId.toLowerCase());
  }

  isAdmin(caller: Caller): boolean {
    return caller.aadObjectId !== undefined && this.admins.has(caller.aadObjectId.toLowerCase());
  }
}
