/* A library whose constructor writes a file before the interposer's own
 * constructor has run (the loader initialises needed libraries first): the
 * interposed open and write must already work there. */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((constructor)) static void writeEarly(void) {
  const char *path = getenv("VICTIM_EARLY_FILE");
  if (!path) return;
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0) return;
  (void)!write(fd, "early\n", 6);
  close(fd);
}
