#include <unistd.h>
int main(void) { char b[64]; while (read(0, b, sizeof(b)) > 0) ; _exit(0); }
