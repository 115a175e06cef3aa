// The dashboard (docs/design.md §12): the login, then a page by the address's hash (#fleet,
// #node/<id>, #targets, #target/<name>, #rollouts, #rollout/<app>, #receipts, #audit), its data loaded again every 2 s
// while the tab is visible.
import { ApiError, currentSession, login, logout } from './api.js';
import type { Session } from './api-types.js';
import { h, replace } from './dom.js';
import type { Page, PageContext } from './page.js';
import { auditPage } from './pages/audit.js';
import { fleetPage } from './pages/fleet.js';
import { nodePage } from './pages/node.js';
import { receiptsPage } from './pages/receipts.js';
import { rolloutPage } from './pages/rollout.js';
import { rolloutsPage } from './pages/rollouts.js';
import { targetPage, targetsPage } from './pages/targets.js';

const REFRESH_MS = 2000;
const root = document.getElementById('app') as HTMLElement;

function pageOf(ctx: PageContext, hash: string): Page {
  const [where = '', qs = ''] = hash.replace(/^#/, '').split('?');
  const [name, arg] = where.split('/').map((p) => decodeURIComponent(p));
  const params = new URLSearchParams(qs);
  if (name === 'node' && arg) return nodePage(ctx, arg);
  if (name === 'rollouts') return rolloutsPage(ctx, params);
  if (name === 'rollout' && arg) return rolloutPage(ctx, arg);
  if (name === 'targets') return targetsPage();
  if (name === 'target' && arg) return targetPage(arg);
  if (name === 'receipts') return receiptsPage(params);
  if (name === 'audit') return auditPage(params);
  return fleetPage(params);
}

function showLogin(message?: string): void {
  stopRefresh();
  const token = h('input', { type: 'password', name: 'token', placeholder: 'so_…', id: 'token' });
  const error = h('p', { class: 'banner bad', data: { section: 'login-error' } }, message ?? '');
  if (!message) error.hidden = true;
  replace(
    root,
    h(
      'form',
      {
        class: 'login',
        onsubmit: (e) => {
          e.preventDefault();
          login(token.value.trim()).then(
            (s) => showApp(s),
            (err: unknown) => {
              error.hidden = false;
              replace(error, err instanceof Error ? err.message : String(err));
            },
          );
        },
      },
      h('h1', {}, 'steward-control'),
      h('label', { class: 'stack' }, 'Operator token', token),
      h('button', { type: 'submit', class: 'primary' }, 'Log in'),
      error,
      h('p', { class: 'muted' }, 'An operator token comes from `steward-control operator add NAME --role viewer|operator|admin`.'),
    ),
  );
  token.focus();
}

let timer: number | null = null;
// The page shown; `loading` while its data is on the way (a load of a page left meanwhile is dropped).
let current: { page: Page; body: HTMLElement; status: HTMLElement; loading: boolean } | null = null;

function stopRefresh(): void {
  if (timer !== null) clearTimeout(timer);
  timer = null;
  current = null;
}

// Loads the current page's data into its body; schedules the next load while the tab is visible.
async function refresh(): Promise<void> {
  if (timer !== null) clearTimeout(timer);
  timer = null;
  const at = current;
  if (!at || at.loading) return;
  at.loading = true;
  try {
    const content = await at.page.load();
    if (current !== at) return;
    replace(at.body, content);
    replace(at.status, `updated ${new Date().toLocaleTimeString()}`);
    at.status.className = 'live';
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return showLogin('Your session is over: log in again.');
    if (current !== at) return;
    replace(at.status, `not updated: ${err instanceof Error ? err.message : String(err)}`);
    at.status.className = 'live stale';
  } finally {
    at.loading = false;
  }
  if (current === at && !document.hidden) timer = window.setTimeout(() => void refresh(), REFRESH_MS);
}

function showApp(session: Session): void {
  stopRefresh();
  const banner = h('div', { class: 'banner bad', data: { section: 'error' } });
  banner.hidden = true;
  const fail = (err: unknown) => {
    banner.hidden = false;
    replace(banner, err instanceof Error ? err.message : String(err), ' ', h('button', { type: 'button', onclick: () => (banner.hidden = true) }, 'dismiss'));
  };
  const ctx: PageContext = { session, canChange: session.role !== 'viewer', refresh: () => void refresh(), fail };
  const page = pageOf(ctx, location.hash);
  const hash = location.hash.replace(/^#/, '').split(/[/?]/)[0] || 'fleet';
  const nav = (name: string, label: string) => h('a', { href: `#${name}`, class: hash === name || (name === 'rollouts' && hash === 'rollout') || (name === 'targets' && hash === 'target') ? 'here' : '' }, label);
  const status = h('span', { class: 'live' }, 'loading…');
  const body = h('main', { data: { page: hash } });
  replace(
    root,
    h(
      'header',
      {},
      h('strong', { class: 'brand' }, 'steward-control'),
      h('nav', {}, nav('fleet', 'Fleet'), nav('targets', 'Targets'), nav('rollouts', 'Rollouts'), nav('receipts', 'Receipts'), nav('audit', 'Audit')),
      status,
      h('span', { class: 'who', data: { role: session.role } }, `${session.operator} (${session.role})`),
      h('button', { type: 'button', data: { action: 'logout' }, onclick: () => void logout(session).then(() => showLogin(), fail) }, 'Log out'),
    ),
    banner,
    h('h1', {}, page.title),
    page.controls ?? null,
    body,
  );
  document.title = `${page.title} · steward-control`;
  current = { page, body, status, loading: false };
  void refresh();
}

async function start(): Promise<void> {
  const session = await currentSession().catch(() => null);
  if (session) showApp(session);
  else showLogin();
}

window.addEventListener('hashchange', () => void start());
document.addEventListener('visibilitychange', () => {
  if (!document.hidden) void refresh();
});
void start();
