// Preact through htm: every value lands in a text node or an attribute, never in innerHTML,
// so names, task output and configuration values that hold markup show as text.
import { h } from 'preact';
import htm from 'htm';
import { safeUrl, stateClass } from './fmt.js';

export const html = htm.bind(h);

export const StateBadge = ({ state }) => html`<span class=${stateClass(state)} data-state=${state}>${state || '?'}</span>`;

export function ExtLink({ href, children }) {
  const url = safeUrl(href);
  if (!url) return html`<span>${children || href}</span>`;
  return html`<a href=${url} target="_blank" rel="noopener noreferrer">${children || href}</a>`;
}

export const jobHref = (id) => `#/jobs/${encodeURIComponent(id)}`;

export function ErrorBox({ error }) {
  if (!error) return null;
  return html`<div class="error" role="alert">${String(error.message || error)}</div>`;
}

export function Empty({ children }) {
  return html`<div class="empty">${children}</div>`;
}
