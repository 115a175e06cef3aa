import os from 'node:os';

// Who is acting, for the hold an operator's action leaves: the sudo user when there is one.
export function operator(): string {
  const sudo = process.env.SUDO_USER;
  let name = 'unknown';
  try {
    name = os.userInfo().username;
  } catch {
    // no passwd entry
  }
  return (sudo ? `${sudo} (sudo)` : name).slice(0, 128);
}
