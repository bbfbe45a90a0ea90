// Compiled (not run) by __test__/package.test.mjs: the public types must
// describe real usage without casts.
import {
  openStore,
  Resolver,
  Indexer,
  stableStringify,
  identityHash,
  fileHash,
  type ScmError,
  type FileDocument,
} from '../../index.js';

export async function usage(): Promise<void> {
  const store = await openStore({ kind: 'embedded', path: '/tmp/x.sqlite' });
  const xt = await openStore({ kind: 'xtdb', url: 'http://127.0.0.1:3000', timeoutMs: 2000 });
  const receipt = await store.submit([{ op: 'put', doc: { 'xt/id': 'a', v: 1 } }, { op: 'match', id: 'b', expected: null }]);
  const n: number = receipt.txId;
  const doc = await xt.getAsOf('a', { txId: n });
  const history = await store.history<FileDocument>('a');
  const first: string | null | undefined = history[0]?.doc?.content;
  const resolver = new Resolver({ workspaceRoot: '/w', mounts: [{ agentPrefix: '/work', canonicalPrefix: '/w', filesystemId: 'fs' }] });
  const r = resolver.resolve('a.ts');
  const indexer = new Indexer(store, resolver, { maxContentBytes: 1024 });
  const res = await indexer.indexFile(r.source.path);
  const state: 'present' | 'stub' | 'deleted' = res.doc.state;
  try {
    await indexer.discoverFiles(['b.ts']);
  } catch (e) {
    const code: string = (e as ScmError).code;
    void code;
  }
  void [doc, first, state, stableStringify({ a: 1 }), identityHash('chat', null, 'chat:1'), fileHash(new Uint8Array([1]))];
}

import { ContextManager, SelfContextManager, defaultStorePath, type OpResult, type HarnessMessage, type RefAsText } from '../../index.js';

export async function sessions(): Promise<void> {
  const cm = await ContextManager.open({ sessionId: 's', store: { kind: 'xtdb', url: 'http://x' }, policy: { perTurn: 3 }, watch: true });
  const out: HarnessMessage[] = await cm.transformContext([{ role: 'user', content: 'hi', timestamp: 1 }]);
  const observed: number = await cm.observeMessages(out);
  void observed;
  const r: OpResult = await cm.read('a.ts');
  const activeIds: string[] = cm.snapshot().activeSet;
  const again = await cm.reconstructCall(0);
  const seen: HarnessMessage[] | undefined = (await cm.callSummaries(0, 1, { context: true }))[0]?.context;
  void seen;
  const asOf = await cm.getObjectAsOf('a', 3);
  const versions: number[] = (await cm.versions('a.ts')).versions.map((v) => v.txId);
  const older: string | null = (await cm.showVersion('a.ts', 1)).contentHash;
  const patch: string = (await cm.diff('a.ts', 'tx:3', 'latest')).diff;
  const hits: string[] = (await cm.search('plan', { types: ['file'], limit: 5 })).hits.map((h) => h.id);
  void [versions, older, patch, hits];
  await cm.observeLs('a\nb', '/w');
  const refused: RefAsText | null = cm.checkToolCall('write', { path: 'a.ts', content: '[t1 · 3 lines]' });
  const why: string | undefined = refused?.message;
  void why;
  await cm.close();
  const m = new SelfContextManager({ sessionId: 's', workspaceRoot: '/w' });
  const sync: OpResult = m.activate('x');
  const snap = m.getSnapshot();
  const has: boolean = snap.activeSet.has('x');
  const first = snap.metadataPool[0]?.file_type;
  const field: string | undefined = m.checkToolCall('edit', { path: 'a.ts', oldText: 'a', newText: 'b' })?.field;
  await m.wrappedWrite('a.ts', 'x');
  await m.observeToolExecutionEnd('bash', 'ls');
  const ids: string[] = [m.sessionObjectId, m.chatObjectId, m.systemPromptObjectId, defaultStorePath('/w')];
  void [out, r, activeIds, again, asOf, sync, has, first, ids, field];
}

import { commitsOf, type ContextCommit, type Materialized } from '../../index.js';

export async function contextCommits(): Promise<void> {
  const cm = await ContextManager.open({ sessionId: 'b', fromCommit: 'ctx-0', template: 'pi/1', principal: 'me@host' });
  const c: ContextCommit | null = await cm.checkpoint({ trigger: 'turn_boundary', summary: 's' });
  const tip: string | null = cm.commitTip;
  const h: ContextCommit[] = await cm.commits.history(tip ?? '', { depth: 3 });
  const at: string | null = await commitsOf(cm.store).resolve({ principal: 'me@host', at: new Date() });
  const m: Materialized = await cm.commits.materialize(c?.id ?? '', { stop: 'root', format: 'pi-jsonl' });
  await cm.commits.updateMetadata(h[0]?.id ?? '', { summary: null });
  void [at, m.jsonl, m.messages?.length];
}
