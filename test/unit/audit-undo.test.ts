// No trace, no change: an admin change whose audit record cannot be written is undone, and the admin sees the failure.
import { describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { linkCommand, unlinkCommand, type LinkDeps } from '../../src/features/admin/link.js';
import { auditOrUndo } from '../../src/features/audit.js';
import type { OrgBindings } from '../../src/bindings/bindings.js';
import type { CommandContext } from '../../src/features/types.js';

/** One team's binding kept in memory, with the calls `link` and `unlink` make. */
function oneTeam(orgId: string | undefined) {
  const team = { orgId };
  const bindings = {
    mode: 'multi',
    allowedOrgIds: ['00801ORGA', '00801ORGB'],
    allowedOrg: (org: string) => org,
    link: (_target: unknown, org: string) => {
      const previousOrgId = team.orgId;
      team.orgId = org;
      return Promise.resolve(previousOrgId);
    },
    remove: () => {
      const previous = team.orgId;
      team.orgId = undefined;
      return Promise.resolve(previous);
    },
  };
  const deps: LinkDeps = {
    orgBindings: bindings as unknown as OrgBindings,
    access: { isAdmin: () => true },
    audit: { admin: () => Promise.reject(new Error('audit trail unavailable')) },
  };
  return { team, deps };
}

function ctx(line: string): CommandContext {
  const [name = '', ...args] = line.split(' ');
  return {
    input: { name, args, argText: args.join(' '), page: 0 },
    scope: {
      kind: 'channel',
      tenantId: 't',
      teamId: '19:team',
      aadGroupId: undefined,
      channelId: '19:c',
      conversationId: '19:c',
      serviceUrl: 'http://x',
    },
    caller: { id: '29:a', aadObjectId: 'a', name: 'Avery' },
    orgId: undefined,
    correlationId: 'unit',
    now: new Date(0),
    log: pino({ level: 'silent' }),
  };
}

describe('an admin change while the audit trail cannot be written', () => {
  it('relinking a team to another organisation fails and leaves it on the organisation it had', async () => {
    const { team, deps } = oneTeam('00801ORGA');
    await expect(linkCommand.run(ctx('link 00801ORGB'), deps)).rejects.toThrow('audit trail unavailable');
    expect(team.orgId).toBe('00801ORGA');
  });

  it("a team's first link fails and leaves it unlinked", async () => {
    const { team, deps } = oneTeam(undefined);
    await expect(linkCommand.run(ctx('link 00801ORGB'), deps)).rejects.toThrow('audit trail unavailable');
    expect(team.orgId).toBeUndefined();
  });

  it('unlinking fails and leaves the team linked', async () => {
    const { team, deps } = oneTeam('00801ORGA');
    await expect(unlinkCommand.run(ctx('unlink'), deps)).rejects.toThrow('audit trail unavailable');
    expect(team.orgId).toBe('00801ORGA');
  });

  it('an undo that fails too does not hide why the change was refused', async () => {
    let undone = false;
    const undo = () => {
      undone = true;
      return Promise.reject(new Error('store down'));
    };
    await expect(auditOrUndo(Promise.reject(new Error('audit trail unavailable')), undo)).rejects.toThrow('audit trail unavailable');
    expect(undone).toBe(true);
  });
});
