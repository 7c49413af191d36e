// fragment.mjs -- what the address's fragment asks of the page (pure): a
// share link's token (`#share=TOKEN`, DESIGN 2 "Shares") or a recording
// to play (`#play=ID`), and the link a share is given as.
//
// Owns: the fragment's grammar and each value's rule, the share link's
// form.  Does not own: the token once read (api.mjs keeps it in memory
// and sends it as the Ptyd-Share header; app.js takes it out of the
// address), what the page does in each mode (app.js).
//
// The token lives in the fragment because a browser never sends the
// fragment: it reaches no server, proxy or access log.  It is never put
// in a query string, in storage or on the console.

// A token: base64url of 32 random bytes, no padding (43 characters).
export const TOKEN_RE = /^[A-Za-z0-9_-]{43}$/;
const ID_RE = /^[1-9][0-9]{0,15}$/;

// The fragment (location.hash, with or without its '#') as {share, play,
// shared, bad}: share the token or null; play a recording's id (a
// number) or null; shared: the page was opened from a share link and has
// since lost its token (a reload: withoutShare); bad: what was asked but
// malformed ('share' or 'play'), else null.
export function parseFragment(hash) {
	const out = { share: null, play: null, shared: false, bad: null };
	const h = typeof hash === 'string' ? hash.replace(/^#/, '') : '';
	if (h === '')
		return out;
	for (const part of h.split('&')) {
		const eq = part.indexOf('=');
		const key = eq === -1 ? part : part.slice(0, eq);
		const value = eq === -1 ? '' : part.slice(eq + 1);
		if (key === 'share') {
			if (TOKEN_RE.test(value))
				out.share = value;
			else
				out.bad = 'share';
		} else if (key === 'shared' && eq === -1) {
			out.shared = true;
		} else if (key === 'play') {
			if (ID_RE.test(value) && Number.isSafeInteger(Number(value)))
				out.play = Number(value);
			else
				out.bad = 'play';
		}
	}
	if (out.share !== null && out.play !== null) {
		// One page is one thing: a share link never plays a recording.
		out.play = null;
	}
	return out;
}

// The fragment with the share's token taken out, once the page has read
// it: `shared` stands in its place, so a reload (which has lost the
// token, kept in memory only) says to open the link again rather than
// starting a shell of the viewer's own.
export function withoutShare(hash) {
	const h = typeof hash === 'string' ? hash.replace(/^#/, '') : '';
	const rest = h.split('&').filter((p) => p !== '' && !/^share(=|$)/.test(p) && p !== 'shared');
	return '#' + ['shared', ...rest].join('&');
}

// The link a share is given as: this page's address, no query string
// (the session is the share's), the token in the fragment.
export function shareLink(origin, pathname, token) {
	return origin + pathname + '#share=' + token;
}

// The page's address to play recording id.
export function playLink(pathname, id) {
	return pathname + '#play=' + id;
}
