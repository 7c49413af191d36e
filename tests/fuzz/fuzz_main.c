/*
 * fuzz_main.c -- a main() for the fuzz targets when libFuzzer is not linked:
 * runs every file named on the command line (or found in a directory named
 * there) through LLVMFuzzerTestOneInput, then a fixed number of mutations of
 * each, from a fixed seed, so `make check` repeats the same inputs on every
 * run and on every machine.  Coverage-guided fuzzing is `make fuzz`.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define FUZZ_MAX_INPUT	(300 * 1024)
#define MUTATIONS	2000

static uint64_t	rng = 0x9e3779b97f4a7c15ULL;

static uint32_t
next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return ((uint32_t)(rng >> 16));
}

/* Flip, insert, delete or overwrite a few bytes, sometimes a length field. */
static size_t
mutate(uint8_t *buf, size_t len, size_t cap)
{
	size_t	i, n = 1 + next_rand() % 4, at;

	for (i = 0; i < n; i++) {
		at = len != 0 ? next_rand() % len : 0;
		switch (next_rand() % 5) {
		case 0:
			if (len != 0)
				buf[at] ^= (uint8_t)(1u << (next_rand() % 8));
			break;
		case 1:
			if (len < cap) {
				memmove(buf + at + 1, buf + at, len - at);
				buf[at] = (uint8_t)next_rand();
				len++;
			}
			break;
		case 2:
			if (len != 0) {
				memmove(buf + at, buf + at + 1, len - at - 1);
				len--;
			}
			break;
		case 3:
			if (len != 0)
				buf[at] = (uint8_t)next_rand();
			break;
		default:
			len = at;	/* truncate */
			break;
		}
	}
	return (len);
}

static int
run_file(const char *path)
{
	static uint8_t	orig[FUZZ_MAX_INPUT], buf[FUZZ_MAX_INPUT];
	FILE		*f;
	size_t		 len, n;
	int		 i;

	if ((f = fopen(path, "rb")) == NULL) {
		perror(path);
		return (-1);
	}
	len = fread(orig, 1, sizeof(orig), f);
	fclose(f);
	LLVMFuzzerTestOneInput(orig, len);
	for (i = 0; i < MUTATIONS; i++) {
		memcpy(buf, orig, len);
		n = mutate(buf, len, sizeof(buf));
		LLVMFuzzerTestOneInput(buf, n);
	}
	return (0);
}

int
main(int argc, char **argv)
{
	struct stat	 st;
	struct dirent	*de;
	DIR		*d;
	char		 path[4096];
	int		 i, files = 0;

	for (i = 1; i < argc; i++) {
		if (stat(argv[i], &st) == -1) {
			perror(argv[i]);
			return (1);
		}
		if (!S_ISDIR(st.st_mode)) {
			if (run_file(argv[i]) == -1)
				return (1);
			files++;
			continue;
		}
		if ((d = opendir(argv[i])) == NULL) {
			perror(argv[i]);
			return (1);
		}
		while ((de = readdir(d)) != NULL) {
			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", argv[i], de->d_name);
			if (run_file(path) == -1) {
				closedir(d);
				return (1);
			}
			files++;
		}
		closedir(d);
	}
	/* TAP, so the automake driver counts it like the Criterion suites. */
	printf("1..1\n%s - %d corpus files, %d mutations each\n",
	    files > 0 ? "ok 1" : "not ok 1", files, MUTATIONS);
	return (files > 0 ? 0 : 1);
}
