// The gateway's HTTP API as the page calls it: JSON in and out; a refused login sends the page to sign in again.

export async function api(path, init) {
  const res = await fetch(path, init);
  // The login cookie expired or the token changed: sign in again.
  if (res.status === 401) location.assign(`/login?next=${encodeURIComponent(location.pathname)}`);
  let body = null;
  try {
    body = await res.json();
  } catch {
    body = null;
  }
  if (!res.ok) throw new Error((body && body.error) || `${res.status} ${res.statusText}`);
  return body;
}
