/* A static program the end-to-end tests run inside containers whose image
 * holds busybox and nothing else (no libc to load): each command sets up one
 * kind of shared memory, or one way of running a program, and then sleeps
 * until it is killed, so that the host sees it while it lasts.
 *
 *   shm_actor sleep                  only sleep
 *   shm_actor hold PATH MODE         create (or open) PATH, chmod MODE, keep it open
 *   shm_actor sysv KEY MODE          shmget(KEY, 64 KiB, MODE) (KEY 0: IPC_PRIVATE),
 *                                    shmat, print the shmid, stay attached
 *   shm_actor sysv-leave KEY MODE    the same, then shmdt, print the shmid and exit:
 *                                    a detached segment whose creator is gone
 *   shm_actor attach SHMID           shmat an existing segment, print "attached", stay
 *   shm_actor memfd-exec NAME        copy this program into a memfd named NAME
 *                                    and fexecve it (`sleep`): no file on disk
 *   shm_actor fill PATH MIB          create PATH of MIB MiB, map it and touch
 *                                    every page (as torch's file_system strategy
 *                                    fills a batch), print "filled", stay: under a
 *                                    memory limit below MIB, the kernel OOM-kills it
 *
 * MODE and KEY are octal and decimal; every failure exits non-zero with
 * one line on stderr. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <unistd.h>

extern char **environ;

static int fail(const char *what) {
  fprintf(stderr, "shm_actor: %s: %s\n", what, strerror(errno));
  return 1;
}

static _Noreturn void sleep_forever(void) {
  fflush(stdout);
  for (;;)
    pause();
}

static int hold(const char *path, const char *mode_text) {
  mode_t mode = (mode_t)strtoul(mode_text, NULL, 8);
  int fd = open(path, O_RDWR | O_CREAT, mode);
  if (fd < 0)
    return fail(path);
  if (write(fd, "shm", 3) != 3 || fchmod(fd, mode) != 0) /* fchmod: not the umask's mode */
    return fail(path);
  printf("held %s\n", path);
  sleep_forever();
}

static int sysv(const char *key_text, const char *mode_text, int stay) {
  key_t key = (key_t)strtol(key_text, NULL, 10);
  int mode = (int)strtol(mode_text, NULL, 8);
  int id = shmget(key == 0 ? IPC_PRIVATE : key, 64 * 1024, IPC_CREAT | mode);
  if (id < 0)
    return fail("shmget");
  char *p = shmat(id, NULL, 0);
  if (p == (void *)-1)
    return fail("shmat");
  memset(p, 0x5a, 64 * 1024);
  if (!stay && shmdt(p) != 0)
    return fail("shmdt");
  printf("shmid %d\n", id);
  if (!stay)
    return 0;
  sleep_forever();
}

static int attach(const char *id_text) {
  if (shmat((int)strtol(id_text, NULL, 10), NULL, SHM_RDONLY) == (void *)-1)
    return fail("shmat");
  printf("attached %s\n", id_text);
  sleep_forever();
}

static int memfd_exec(const char *name) {
  int self = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  if (self < 0)
    return fail("/proc/self/exe");
  struct stat st;
  if (fstat(self, &st) != 0)
    return fail("fstat");
  int mem = memfd_create(name, 0); /* no MFD_CLOEXEC: fexecve reads it through /proc/self/fd */
  if (mem < 0)
    return fail("memfd_create");
  for (off_t done = 0; done < st.st_size;) {
    ssize_t n = sendfile(mem, self, NULL, (size_t)(st.st_size - done));
    if (n <= 0)
      return fail("sendfile");
    done += n;
  }
  close(self);
  char *argv[] = {"shm_actor", "sleep", NULL};
  fexecve(mem, argv, environ);
  return fail("fexecve");
}

static int fill(const char *path, const char *mib_text) {
  size_t size = (size_t)strtoul(mib_text, NULL, 10) << 20;
  int fd = open(path, O_RDWR | O_CREAT, 0600);
  if (fd < 0 || ftruncate(fd, (off_t)size) != 0)
    return fail(path);
  volatile char *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED)
    return fail("mmap");
  long page = sysconf(_SC_PAGESIZE);
  for (size_t off = 0; off < size; off += (size_t)page)
    p[off] = 1;
  printf("filled %s\n", path);
  sleep_forever();
}

int main(int argc, char **argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc == 2 && strcmp(argv[1], "sleep") == 0)
    sleep_forever();
  if (argc == 4 && strcmp(argv[1], "hold") == 0)
    return hold(argv[2], argv[3]);
  if (argc == 4 && strcmp(argv[1], "sysv") == 0)
    return sysv(argv[2], argv[3], 1);
  if (argc == 4 && strcmp(argv[1], "sysv-leave") == 0)
    return sysv(argv[2], argv[3], 0);
  if (argc == 3 && strcmp(argv[1], "attach") == 0)
    return attach(argv[2]);
  if (argc == 3 && strcmp(argv[1], "memfd-exec") == 0)
    return memfd_exec(argv[2]);
  if (argc == 4 && strcmp(argv[1], "fill") == 0)
    return fill(argv[2], argv[3]);
  fprintf(stderr, "usage: shm_actor sleep | hold PATH MODE | sysv KEY MODE | sysv-leave KEY MODE | "
                  "attach SHMID | memfd-exec NAME | fill PATH MIB\n");
  return 2;
}
