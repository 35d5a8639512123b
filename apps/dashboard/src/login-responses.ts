import type { Request, Response } from 'express';
import { html, type SafeHtml } from './html.js';
import { sendPage } from './routes/respond.js';

/**
 * The answers of the login check. A browser (it asks for text/html) gets a small page, which it shows when
 * the operator cancels the password prompt; scripts and the JSON API (`/api/...`, `/queues/api/...`) get
 * JSON, as every other error of theirs.
 */
function wantsPage(req: Request): boolean {
  if (req.path.startsWith('/api/') || req.path.startsWith('/queues/api/')) return false;
  return req.accepts(['json', 'html']) === 'html';
}

function page(title: string, text: SafeHtml): SafeHtml {
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>tickwork: ${title}</title>
<style>body { font: 15px/1.5 system-ui, sans-serif; margin: 48px auto; max-width: 36em; color: #1d2430; padding: 0 16px; }</style>
</head><body><h1>${title}</h1><p>${text}</p></body></html>
`;
}

function answer(req: Request, res: Response, status: number, title: string, text: SafeHtml, error: string): void {
  if (wantsPage(req)) sendPage(res, page(title, text), status);
  else res.status(status).json({ error });
}

/** 401 with the Basic challenge: no credentials, or wrong ones. */
export function challenge(req: Request, res: Response, realm: string): void {
  res.set('WWW-Authenticate', `Basic realm="${realm}", charset="UTF-8"`);
  answer(req, res, 401, 'Sign-in required', html`The tickwork dashboard needs a user name and password. Reload the page to sign in.`, 'authentication required');
}

/** 429: this address or user name had too many wrong passwords in the window. */
export function tooManyAttempts(req: Request, res: Response, retryAfterS: number): void {
  res.set('Retry-After', String(retryAfterS));
  const wait = retryAfterS >= 120 ? `${Math.ceil(retryAfterS / 60)} minutes` : `${retryAfterS} seconds`;
  answer(
    req,
    res,
    429,
    'Too many wrong passwords',
    html`Sign-in from this address or for this user name is paused after too many wrong passwords. Try again in ${wait}.`,
    `too many wrong passwords; try again in ${retryAfterS} s`,
  );
}

/** 503: the queue of password checks is full (a flood of logins from many addresses). */
export function checksBusy(req: Request, res: Response): void {
  res.set('Retry-After', '1');
  answer(req, res, 503, 'Busy', html`The dashboard is checking too many sign-ins at once. Try again in a moment.`, 'too many logins being checked; try again in 1 s');
}
