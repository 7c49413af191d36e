// viewer.test.mjs -- node:test tests of which tab takes the terminal's
// size from outside (web/viewer.mjs): the stream's resize event goes
// through adoptSize, which must size a view-only page and an inactive
// tab, and never the active tab, which sizes the terminal itself (two
// owner tabs of different window sizes would otherwise resize each
// other forever).

import { mock, test } from 'node:test';
import assert from 'node:assert/strict';

globalThis.window = globalThis.window ?? {};   // no BroadcastChannel here
const { Viewer } = await import('../../web/viewer.mjs');

function fakeTerm(rows, cols) {
	return {
		rows, cols, resizes: [],
		onResize() {},
		resize(c, r) {
			this.resizes.push([r, c]);
			this.rows = r;
			this.cols = c;
		},
	};
}

function viewer(term, readOnly) {
	const posts = [];
	const v = new Viewer({ term, fit: { fit() {} }, sid: 's', viewerId: 'v', live: () => true, readOnly,
		post: (ep, b) => { posts.push([ep, b]); return new Promise(() => {}); } });
	return { v, posts };
}

test('a view-only page takes every size it is told, and sends none', () => {
	const term = fakeTerm(24, 80);
	const { v, posts } = viewer(term, true);
	v.claim();
	v.adoptSize(30, 100);
	v.adoptSize(31, 101);
	assert.deepEqual(term.resizes, [[30, 100], [31, 101]]);
	v.pump();
	assert.deepEqual(posts, []);
	assert.equal(v.active, false);
});

test('the active tab keeps its own size; an inactive one follows', () => {
	const term = fakeTerm(24, 80);
	const { v } = viewer(term, false);
	v.claim();
	assert.equal(v.active, true);
	v.adoptSize(40, 120);               // another tab's size, as the event says
	assert.deepEqual(term.resizes, [], 'the active tab sizes the terminal itself');
	v.heard({ t: 'active', v: 'other', rows: 40, cols: 120 });
	assert.equal(v.active, false);
	v.adoptSize(41, 121);
	assert.deepEqual(term.resizes, [[40, 120], [41, 121]]);
});

// A resize the front answered: the same size goes again after a backoff
// only when the answer says the server is away.
async function resizeAnswered(answer) {
	mock.timers.enable({ apis: ['setTimeout'] });
	try {
		const term = fakeTerm(24, 80);
		const posts = [];
		const v = new Viewer({ term, fit: { fit() {} }, sid: 's', viewerId: 'v', live: () => true,
			readOnly: false, post: (ep, b) => {
				posts.push([ep, b]);
				return Promise.resolve(posts.length === 1 ? answer : { status: 200, data: {} });
			} });
		v.claim();
		for (let i = 0; i < 3; i++)
			await new Promise((r) => setImmediate(r));
		mock.timers.tick(250);
		for (let i = 0; i < 3; i++)
			await new Promise((r) => setImmediate(r));
		return { posts, sent: v.sentSize };
	} finally {
		mock.timers.reset();
	}
}

test('a resize a front answered 500 "ptyd.fcgi is not running" goes again; ptyd.fcgi\'s own 500 does not', async () => {
	const gone = await resizeAnswered({ status: 500, data: { error: 'ptyd.fcgi is not running' } });
	assert.equal(gone.posts.length, 2);
	assert.deepEqual(gone.posts[1], ['resize', { session_id: 's', rows: 24, cols: 80 }]);
	assert.deepEqual(gone.sent, { rows: 24, cols: 80 });
	const broken = await resizeAnswered({ status: 500, data: { error: 'internal error' } });
	assert.equal(broken.posts.length, 1);
	assert.equal(broken.sent, null);
});
