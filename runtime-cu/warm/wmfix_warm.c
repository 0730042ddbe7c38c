// wmfix warm runs (src/run/warm.rs): preloaded into the program (LD_PRELOAD) with WMFIX_WARM=1,
// it calls the program's main once per request instead of once per process, so that one
// process, and one CUDA context, serves many runs. A context costs a process about 0.14 s, and a
// host makes them one after another whatever its GPUs (results/2026-11-26-nvidia-h100-80gb-hbm3).
//
// Requests come on stdin, one item a line; replies go to the stdout wmfix reads:
//   set NAME=VALUE   unset NAME   log PATH (the run's stdout and stderr)   run   quit
// After `run`: "exit N", N being main's return value or what it passed to exit(), as a process's
// exit status (0-255); then "health none" for a program without wmfix's host library, or
// "health S FREE TOTAL" from it (S 1: a sticky CUDA error; the device's free and total bytes),
// which tells wmfix whether the process can serve another run. A signal kills the process, and
// wmfix sees it die.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int (*main_fn)(int, char **, char **);
typedef int (*start_fn)(main_fn, int, char **, void (*)(void), void (*)(void), void (*)(void), void *);

extern char **environ;

static main_fn app_main;
static jmp_buf run_end;
static volatile int in_run;
static volatile int run_status;
static pthread_t server;

// wmfix's host library, loaded into the program at its first launch, offers its health check.
typedef int (*health_fn)(unsigned long long *, unsigned long long *);
static health_fn health;
__attribute__((visibility("default"))) void wmfix_warm_health(health_fn fn) { health = fn; }

// exit() during a run ends the run, not the process: its atexit handlers (the CUDA runtime's
// context teardown among them) stay for the process's real end.
void exit(int status) {
  if (in_run && pthread_equal(pthread_self(), server)) {
    in_run = 0;
    run_status = status;
    longjmp(run_end, 1);
  }
  void (*real_exit)(int) = (void (*)(int))dlsym(RTLD_NEXT, "exit");
  if (real_exit) real_exit(status);
  _exit(status);
}

// One run of main on a fresh copy of argv (main may permute it, as getopt does).
static int run_main(int argc, char **argv) {
  char **args = calloc((size_t)argc + 1, sizeof *args);
  if (!args) return 70;
  memcpy(args, argv, (size_t)argc * sizeof *args);
  optind = 0;  // glibc: getopt starts over
  int status;
  if (setjmp(run_end)) {
    status = run_status;
  } else {
    in_run = 1;
    status = app_main(argc, args, environ);
    in_run = 0;
  }
  free(args);
  return status & 0xff;
}

static int serve(int argc, char **argv, char **envp) {
  (void)envp;
  server = pthread_self();
  unsetenv("LD_PRELOAD");  // what the program starts runs as usual
  FILE *requests = fdopen(dup(0), "r");
  const int replies = dup(1);
  const int own_err = dup(2);
  const int null = open("/dev/null", O_RDWR);
  if (!requests || replies < 0 || own_err < 0 || null < 0) return 70;
  dup2(null, 0);
  dup2(null, 1);
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  while ((n = getline(&line, &cap, requests)) > 0) {
    if (line[n - 1] == '\n') line[--n] = '\0';
    if (strncmp(line, "set ", 4) == 0) {
      char *eq = strchr(line + 4, '=');
      if (eq) {
        *eq = '\0';
        setenv(line + 4, eq + 1, 1);
      }
    } else if (strncmp(line, "unset ", 6) == 0) {
      unsetenv(line + 6);
    } else if (strncmp(line, "log ", 4) == 0) {
      const int fd = open(line + 4, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (fd < 0) {
        dprintf(replies, "error %s: %s\n", line + 4, strerror(errno));
        continue;
      }
      dup2(fd, 1);
      dup2(fd, 2);
      close(fd);
    } else if (strcmp(line, "run") == 0) {
      const int status = run_main(argc, argv);
      fflush(NULL);
      dup2(null, 1);
      dup2(own_err, 2);
      dprintf(replies, "exit %d\n", status);
      if (health) {
        unsigned long long free_bytes = 0, total_bytes = 0;
        const int sticky = health(&free_bytes, &total_bytes);
        dprintf(replies, "health %d %llu %llu\n", sticky, free_bytes, total_bytes);
      } else {
        dprintf(replies, "health none\n");
      }
    } else if (strcmp(line, "quit") == 0) {
      break;
    }
  }
  free(line);
  return 0;
}

int __libc_start_main(main_fn main, int argc, char **argv, void (*init)(void), void (*fini)(void),
                      void (*rtld_fini)(void), void *stack_end) {
  start_fn real = (start_fn)dlsym(RTLD_NEXT, "__libc_start_main");
  const char *on = getenv("WMFIX_WARM");
  if (!on || strcmp(on, "1") != 0) return real(main, argc, argv, init, fini, rtld_fini, stack_end);
  unsetenv("WMFIX_WARM");
  app_main = main;
  return real(serve, argc, argv, init, fini, rtld_fini, stack_end);
}
