// What a page of the dashboard is: its controls (made once, so a refresh never loses what an
// operator is typing) and its data, loaded again every refresh.
import type { Session } from './api-types.js';
import type { Child } from './dom.js';

export interface PageContext {
  session: Session;
  // The role may change things (operator or admin): only then are buttons made.
  canChange: boolean;
  // Loads the page's data again now (after a change).
  refresh(): void;
  // Reports a failed change in the page's banner.
  fail(err: unknown): void;
}

export interface Page {
  title: string;
  controls?: HTMLElement;
  // The page's data as it is now; rejected with an ApiError when the server refuses.
  load(): Promise<Child>;
}

