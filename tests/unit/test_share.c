/*
 * test_share.c -- a share's token (ptyd/sharetok.c) and the share table
 * (ptyd/share.c): text and hash, the constant-time compare, who may use
 * a share and until when, revocation, the terminal's end, the cap, and
 * the header slots a ptyd taking over reads back.
 */
#include <criterion/criterion.h>

#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "ev.h"
#include "proto.h"
#include "ptyd.h"
#include "share.h"
#include "sharetok.h"
#include "term.h"
#include "termhdr.h"
#include "termmem.h"

#define S    PTYD_SEC
#define BASE 5000000000ULL

Test(sharetok, text_is_43_characters_of_base64url)
{
	uint8_t raw[SHARETOK_LEN], back[SHARETOK_LEN];
	char	text[SHARETOK_TEXT + 1];
	int	i;

	for (i = 0; i < SHARETOK_LEN; i++)
		raw[i] = (uint8_t)i;
	sharetok_encode(raw, text);
	cr_expect_str_eq(text, "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8");
	cr_assert_eq(sharetok_decode(text, back), 0);
	cr_expect_arr_eq(raw, back, SHARETOK_LEN);
	memset(raw, 0xff, sizeof(raw));
	sharetok_encode(raw, text);
	cr_expect_str_eq(text, "__________________________________________8");
	cr_assert_eq(sharetok_decode(text, back), 0);
	cr_expect_arr_eq(raw, back, SHARETOK_LEN);
}

/* Two texts never name one token: wrong length, padding, the standard
 * alphabet's + and /, stray bits in the last character. */
Test(sharetok, decode_takes_one_spelling_only)
{
	uint8_t raw[SHARETOK_LEN];

	cr_expect_eq(sharetok_decode("", raw), -1);
	cr_expect_eq(
	    sharetok_decode("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh", raw),
	    -1);
	cr_expect_eq(sharetok_decode(
			 "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=", raw),
	    -1);
	cr_expect_eq(
	    sharetok_decode("+AECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8", raw),
	    -1);
	cr_expect_eq(
	    sharetok_decode("/AECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8", raw),
	    -1);
	/* 8 is 000111 + 00 spare bits; 9 sets one of them. */
	cr_expect_eq(
	    sharetok_decode("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh9", raw),
	    -1);
}

Test(sharetok, hash_is_sha256_of_the_bytes)
{
	uint8_t raw[SHARETOK_LEN] = { 0 }, h[SHARETOK_HASH];
	char	hex[2 * SHARETOK_HASH + 1];

	sharetok_hash(raw, h);
	sharetok_hex(h, hex);
	cr_expect_str_eq(hex,
	    "66687aadf862bd776c8fc18b8e9f8e20089714856ee233b3902a591d0d5f2925");
}

Test(sharetok, equal_sees_a_difference_anywhere)
{
	uint8_t a[SHARETOK_HASH], b[SHARETOK_HASH];
	int	i;

	memset(a, 0x5a, sizeof(a));
	memcpy(b, a, sizeof(b));
	cr_expect(sharetok_equal(a, b));
	for (i = 0; i < SHARETOK_HASH; i++) {
		b[i] ^= 0x01;
		cr_expect(!sharetok_equal(a, b), "byte %d", i);
		b[i] ^= 0x01;
	}
}

Test(sharetok, new_tokens_differ)
{
	uint8_t a[SHARETOK_LEN], b[SHARETOK_LEN];

	cr_assert_eq(sharetok_new(a), 0);
	cr_assert_eq(sharetok_new(b), 0);
	cr_expect(memcmp(a, b, sizeof(a)) != 0);
}

/* The table. */

static void
nowake(struct viewer *v)
{
	(void)v;
}

static void
setup(void)
{
	term_init(NULL);
	ptyd_conf.ring_size = 4096;
	ptyd_conf.share_anonymous = 0;
	ptyd_conf.share_min_ttl = 60 * S;
	ptyd_conf.share_max_ttl = 86400 * S;
	ptyd_conf.max_shares = 16;
}

static struct term *
mk(const char *owner, const char *sid)
{
	struct term *t = term_new(owner, sid, "/tmp", 24, 80, BASE, S);

	term_register(t);
	return (t);
}

static struct share *
made(struct term *t, int role, int64_t ttl, const char *user, int64_t now,
    char *token)
{
	struct share *s = NULL;

	cr_assert_eq(share_create(t, role, ttl, user, "alice@127.0.0.1", now,
			 &s, token),
	    SHARE_OK);
	cr_assert_not_null(s);
	return (s);
}

TestSuite(share, .init = setup);

Test(share, only_its_user_until_it_expires)
{
	struct term  *t = mk("alice", "a");
	char	      tok[SHARETOK_TEXT + 1];
	struct share *s = made(t, PROTO_ROLE_VIEW, 60 * S, "bob", S, tok);

	cr_expect_eq(strlen(tok), SHARETOK_TEXT);
	cr_expect_eq(share_use(tok, "bob", 2 * S), s);
	cr_expect_null(share_use(tok, "carol", 2 * S), "another user");
	cr_expect_null(share_use(tok, "", 2 * S), "no user");
	cr_expect_eq(share_use(tok, "bob", 61 * S - 1), s);
	cr_expect_null(share_use(tok, "bob", 61 * S), "expired");
	tok[0] = tok[0] == 'A' ? 'B' : 'A';
	cr_expect_null(share_use(tok, "bob", 2 * S), "another token");
	cr_expect_null(share_use("", "bob", 2 * S));
}

Test(share, anonymous_only_when_allowed_and_then_for_anyone)
{
	struct term  *t = mk("alice", "b");
	struct share *s = NULL;
	char	      tok[SHARETOK_TEXT + 1];

	cr_expect_eq(share_create(t, PROTO_ROLE_VIEW, 60 * S, NULL, NULL, S, &s,
			 tok),
	    SHARE_EANONYMOUS);
	cr_expect_eq(share_count(t), 0);
	ptyd_conf.share_anonymous = 1;
	s = made(t, PROTO_ROLE_CONTROL, 60 * S, NULL, S, tok);
	cr_expect_eq(share_use(tok, "bob", 2 * S), s);
	cr_expect_eq(share_use(tok, "", 2 * S), s);
}

Test(share, fields_and_the_cap_are_checked)
{
	struct term  *t = mk("alice", "c");
	struct share *s = NULL;
	char	      tok[SHARETOK_TEXT + 1];
	unsigned int  i;

	cr_expect_eq(share_create(t, 0, 60 * S, "bob", NULL, S, &s, tok),
	    SHARE_EROLE);
	cr_expect_eq(share_create(t, PROTO_ROLE_VIEW, 59 * S, "bob", NULL, S,
			 &s, tok),
	    SHARE_ETTL);
	cr_expect_eq(share_create(t, PROTO_ROLE_VIEW, 86401 * S, "bob", NULL, S,
			 &s, tok),
	    SHARE_ETTL);
	for (i = 0; i < ptyd_conf.max_shares; i++)
		made(t, PROTO_ROLE_VIEW, 60 * S, "bob", S, tok);
	cr_expect_eq(share_create(t, PROTO_ROLE_VIEW, 60 * S, "bob", NULL, S,
			 &s, tok),
	    SHARE_ELIMIT);
}

Test(share, revoked_is_gone_and_its_streams_are_told)
{
	struct term  *t = mk("alice", "d");
	char	      tok[SHARETOK_TEXT + 1], other[SHARETOK_TEXT + 1];
	struct share *s = made(t, PROTO_ROLE_VIEW, 60 * S, "bob", S, tok);
	struct share *keep = made(t, PROTO_ROLE_VIEW, 60 * S, "bob", S, other);
	struct viewer v, w;
	uint64_t      resume, lost;
	uint32_t      id = s->id;

	memset(&v, 0, sizeof(v));
	memset(&w, 0, sizeof(w));
	v.wake = w.wake = nowake;
	v.share_id = id;
	v.role = PROTO_ROLE_VIEW;
	cr_assert_eq(term_attach("alice", "d", &v, 0, 0, NULL, 2 * S, &resume,
			 &lost),
	    TERM_OK);
	cr_assert_eq(term_attach("alice", "d", &w, 0, 0, NULL, 2 * S, &resume,
			 &lost),
	    TERM_OK);
	cr_expect_eq(share_viewers(s), 1);
	cr_expect_eq(share_revoke(t, id, "alice@127.0.0.1", 3 * S), 1);
	cr_expect_eq(share_revoke(t, id, "alice@127.0.0.1", 3 * S), 0);
	cr_expect_null(share_use(tok, "bob", 3 * S));
	cr_expect_str_eq(v.share_end, "revoked");
	cr_expect_null(w.share_end, "the owner's stream goes on");
	cr_expect_eq(share_use(other, "bob", 3 * S), keep);
	term_detach(&v, 4 * S);
	term_detach(&w, 4 * S);
}

Test(share, the_terminals_end_ends_its_shares)
{
	struct term *t = mk("alice", "e");
	char	     tok[SHARETOK_TEXT + 1];

	made(t, PROTO_ROLE_VIEW, 60 * S, "bob", S, tok);
	made(t, PROTO_ROLE_CONTROL, 60 * S, "bob", S, tok);
	cr_expect_eq(share_count(t), 2);
	term_set_state(t, TERM_ENDING, TERM_R_CLOSED, 2 * S);
	cr_expect_eq(share_count(t), 0);
	cr_expect_null(share_use(tok, "bob", 2 * S));
}

/* A ptyd taking over reads the shares back from the header: the live
 * ones, not the revoked; one past its expiry ends there. */
Test(share, the_header_carries_live_shares_to_the_next_ptyd)
{
	struct termhdr *h;
	struct term    *t1, *t2;
	struct share   *kept, *s;
	char		tok[SHARETOK_TEXT + 1], gone[SHARETOK_TEXT + 1];
	char		soon[SHARETOK_TEXT + 1];
	uint32_t	id;
	int		fd;

	cr_assert_eq(termmem_create(4096, &fd, &h), 0);
	close(fd);
	t1 = term_new("alice", "f", "/tmp", 24, 80, BASE, S);
	t1->hdr = h;
	kept = made(t1, PROTO_ROLE_CONTROL, 600 * S, "bob", S, tok);
	s = made(t1, PROTO_ROLE_VIEW, 600 * S, "bob", S, gone);
	made(t1, PROTO_ROLE_VIEW, 60 * S, "carol", S, soon);
	cr_assert_eq(share_revoke(t1, s->id, NULL, 2 * S), 1);
	/* The old ptyd is gone: its memory, not the header. */
	id = kept->id;
	share_term_free(t1);
	t1->hdr = NULL;

	t2 = term_new("alice", "f", "/tmp", 24, 80, BASE, S);
	t2->hdr = h;
	term_register(t2);
	share_adopt(t2, 100 * S);
	cr_expect_eq(share_count(t2), 1, "the live one; the expired ended");
	s = share_use(tok, "bob", 100 * S);
	cr_assert_not_null(s);
	cr_expect_eq(s->id, id);
	cr_expect_eq(s->role, PROTO_ROLE_CONTROL);
	cr_expect_str_eq(s->user, "bob");
	cr_expect_null(share_use(gone, "bob", 100 * S));
	cr_expect_null(share_use(soon, "carol", 100 * S));
	cr_expect_null(share_use(tok, "carol", 100 * S));
}
