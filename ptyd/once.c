/*
 * once.c -- the window of accepted input ids (once.h).
 *
 * An id is kept as a 64-bit FNV-1a hash keyed with a random value drawn
 * once per process, not as text: 256 ids of up to 64 bytes would cost a
 * terminal 16 KiB, the hashes cost 2 KiB.  Two different ids of one
 * terminal that hash alike would make the second look like a retry and
 * its keys would be dropped: with 256 ids held and a 64-bit hash that is
 * about one chance in 7e16 per request, and only the terminal's owner
 * (the only one who can type into it) chooses its ids, so a collision
 * cannot be aimed at anyone else.
 */
#include <sys/random.h>

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "once.h"
#include "xmalloc.h"

static uint64_t once_key;
static int	once_keyed;

static uint64_t
once_hash(const char *id)
{
	struct timespec ts;
	uint64_t	h;
	size_t		i;

	if (!once_keyed) {
		if (getrandom(&once_key, sizeof(once_key), GRND_NONBLOCK) !=
		    (ssize_t)sizeof(once_key)) {
			clock_gettime(CLOCK_REALTIME, &ts);
			once_key = (uint64_t)ts.tv_nsec *
				0x9e3779b97f4a7c15ULL ^
			    (uint64_t)getpid() ^ (uint64_t)ts.tv_sec;
		}
		once_keyed = 1;
	}
	h = 0xcbf29ce484222325ULL ^ once_key;
	for (i = 0; id[i] != '\0'; i++) {
		h ^= (unsigned char)id[i];
		h *= 0x100000001b3ULL;
	}
	/* The length too, so "a" and "a\0..." never meet. */
	h ^= i;
	h *= 0x100000001b3ULL;
	return (h);
}

int
once_seen(const struct once *o, const char *id)
{
	uint64_t     h;
	unsigned int i;

	if (o->h == NULL)
		return (0);
	h = once_hash(id);
	for (i = 0; i < o->n; i++)
		if (o->h[i] == h)
			return (1);
	return (0);
}

void
once_add(struct once *o, const char *id)
{
	if (o->h == NULL)
		o->h = xcalloc(ONCE_WINDOW, sizeof(*o->h));
	o->h[o->next] = once_hash(id);
	o->next = (o->next + 1) % ONCE_WINDOW;
	if (o->n < ONCE_WINDOW)
		o->n++;
}

void
once_free(struct once *o)
{
	free(o->h);
	o->h = NULL;
	o->n = o->next = 0;
}
