// sse.test.mjs -- node:test tests of the event stream parser (web/sse.mjs):
// the format as EventSource reads it, whatever the chunks' boundaries.

import { test } from 'node:test';
import assert from 'node:assert/strict';

import { SseParser } from '../../web/sse.mjs';

// Everything the parser gives for chunks, pushed one by one.
function parse(...chunks) {
	const p = new SseParser();
	const out = [];
	for (const c of chunks) {
		p.push(c);
		for (let m = p.next(); m !== null; m = p.next())
			out.push(m);
	}
	return out;
}

const STREAM = 'id: 10\nevent: output\ndata: {"text":"a"}\n\n: heartbeat\n\n' +
	'event: heartbeat\ndata: {}\n\nid: 12\nevent: output\ndata: {"text":"b"}\n\n';
const EVENTS = [
	{ event: 'output', id: '10', data: '{"text":"a"}' },
	{ comment: 'heartbeat' },
	{ event: 'heartbeat', id: '10', data: '{}' },
	{ event: 'output', id: '12', data: '{"text":"b"}' },
];

test('events, comments and the last id', () => {
	assert.deepEqual(parse(STREAM), EVENTS);
});

test('the same events whatever the chunks, down to one character each', () => {
	for (const size of [1, 2, 3, 7, 16]) {
		const chunks = [];
		for (let i = 0; i < STREAM.length; i += size)
			chunks.push(STREAM.slice(i, i + size));
		assert.deepEqual(parse(...chunks), EVENTS, 'chunks of ' + size);
	}
});

test('CR, LF and CR LF end lines, a CR LF split between chunks once', () => {
	const want = [{ event: 'message', id: null, data: 'x' }, { event: 'message', id: null, data: 'y' }];
	assert.deepEqual(parse('data: x\r\n\r\ndata: y\r\r'), want);
	assert.deepEqual(parse('data: x\r', '\n', '\r', '\ndata: y\n', '\n'), want);
	assert.deepEqual(parse('data: x\r', '\ndata: y\r\n\r\n'), [{ event: 'message', id: null, data: 'x\ny' }],
	    'a CR LF across chunks is one line end, not an empty line');
});

test('UTF-8 split between chunks comes out whole', () => {
	const bytes = new TextEncoder().encode('data: {"text":"é😀"}\n\n');
	const chunks = Array.from(bytes, (b) => Uint8Array.of(b));
	assert.deepEqual(parse(...chunks), [{ event: 'message', id: null, data: '{"text":"é😀"}' }]);
});

test('fields: several data lines, no space, no value, unknown ones, an id with NUL', () => {
	assert.deepEqual(parse('data:a\ndata: b\ndata\nretry: 5\nfoo\nid: x\0y\n\n'),
	    [{ event: 'message', id: null, data: 'a\nb\n' }]);
	assert.deepEqual(parse('event: gap\n\n'), [{ event: 'gap', id: null, data: '' }], 'an event with no data');
	assert.deepEqual(parse('\n\nid: 3\n\n'), [], 'blank lines and a bare id dispatch nothing');
});

test('nothing comes out before the line that completes it, and the pull may stop anywhere', () => {
	const p = new SseParser();
	p.push('data: one\n\ndata: two\n\ndata: thr');
	assert.deepEqual(p.next(), { event: 'message', id: null, data: 'one' });
	p.push('ee\n\n');
	assert.deepEqual(p.next(), { event: 'message', id: null, data: 'two' });
	assert.deepEqual(p.next(), { event: 'message', id: null, data: 'three' });
	assert.equal(p.next(), null);
});
