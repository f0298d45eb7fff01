#include "CSystemd.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

// Filled once by load(); read only after pthread_once has returned, which orders the writes before the reads.
static struct {
    int (*open)(sd_journal **, int);
    int (*open_directory)(sd_journal **, const char *, int);
    void (*close)(sd_journal *);
    int (*previous)(sd_journal *);
    int (*next)(sd_journal *);
    int (*get_realtime_usec)(sd_journal *, uint64_t *);
    int (*set_data_threshold)(sd_journal *, size_t);
    int (*enumerate_data)(sd_journal *, const void **, size_t *);
    void (*restart_data)(sd_journal *);
    int (*add_match)(sd_journal *, const void *, size_t);
    int (*seek_head)(sd_journal *);
    int (*seek_tail)(sd_journal *);
    int (*seek_realtime_usec)(sd_journal *, uint64_t);
    int (*seek_cursor)(sd_journal *, const char *);
    int (*get_cursor)(sd_journal *, char **);
    int (*test_cursor)(sd_journal *, const char *);
    int (*get_fd)(sd_journal *);
    int (*get_timeout)(sd_journal *, uint64_t *);
    int (*process)(sd_journal *);
} journal;
static int loaded;
static char load_error[256];
static pthread_once_t load_once = PTHREAD_ONCE_INIT;

static void load(void) {
    void *library = dlopen("libsystemd.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        const char *why = dlerror();
        snprintf(load_error, sizeof load_error, "%s", why ? why : "dlopen failed");
        return;
    }
#define RESOLVE(field)                                                                                               \
    do {                                                                                                             \
        *(void **)(&journal.field) = dlsym(library, "sd_journal_" #field);                                           \
        if (!journal.field) {                                                                                        \
            snprintf(load_error, sizeof load_error, "libsystemd.so.0 lacks sd_journal_%s", #field);                 \
            return;                                                                                                  \
        }                                                                                                            \
    } while (0)
    RESOLVE(open);
    RESOLVE(open_directory);
    RESOLVE(close);
    RESOLVE(previous);
    RESOLVE(next);
    RESOLVE(get_realtime_usec);
    RESOLVE(set_data_threshold);
    RESOLVE(enumerate_data);
    RESOLVE(restart_data);
    RESOLVE(add_match);
    RESOLVE(seek_head);
    RESOLVE(seek_tail);
    RESOLVE(seek_realtime_usec);
    RESOLVE(seek_cursor);
    RESOLVE(get_cursor);
    RESOLVE(test_cursor);
    RESOLVE(get_fd);
    RESOLVE(get_timeout);
    RESOLVE(process);
#undef RESOLVE
    loaded = 1;
}

int uplink_systemd_load(void) {
    pthread_once(&load_once, load);
    return loaded ? 0 : -ENOSYS;
}

const char *uplink_systemd_load_error(void) {
    return uplink_systemd_load() == 0 ? NULL : load_error;
}

// A journal handle exists only after a successful open, which needs the library: the other calls find it loaded.
#define FORWARD(name, params, args)                                                                                  \
    int uplink_sd_journal_##name params {                                                                            \
        if (uplink_systemd_load() != 0) return -ENOSYS;                                                              \
        return journal.name args;                                                                                    \
    }
#define FORWARD_VOID(name, params, args)                                                                             \
    void uplink_sd_journal_##name params {                                                                           \
        if (uplink_systemd_load() == 0) journal.name args;                                                           \
    }

FORWARD(open, (sd_journal **ret, int flags), (ret, flags))
FORWARD(open_directory, (sd_journal **ret, const char *path, int flags), (ret, path, flags))
FORWARD_VOID(close, (sd_journal *j), (j))
FORWARD(previous, (sd_journal *j), (j))
FORWARD(next, (sd_journal *j), (j))
FORWARD(get_realtime_usec, (sd_journal *j, uint64_t *ret), (j, ret))
FORWARD(set_data_threshold, (sd_journal *j, size_t sz), (j, sz))
FORWARD(enumerate_data, (sd_journal *j, const void **data, size_t *l), (j, data, l))
FORWARD_VOID(restart_data, (sd_journal *j), (j))
FORWARD(add_match, (sd_journal *j, const void *data, size_t size), (j, data, size))
FORWARD(seek_head, (sd_journal *j), (j))
FORWARD(seek_tail, (sd_journal *j), (j))
FORWARD(seek_realtime_usec, (sd_journal *j, uint64_t usec), (j, usec))
FORWARD(seek_cursor, (sd_journal *j, const char *cursor), (j, cursor))
FORWARD(get_cursor, (sd_journal *j, char **cursor), (j, cursor))
FORWARD(test_cursor, (sd_journal *j, const char *cursor), (j, cursor))
FORWARD(get_fd, (sd_journal *j), (j))
FORWARD(get_timeout, (sd_journal *j, uint64_t *timeout_usec), (j, timeout_usec))
FORWARD(process, (sd_journal *j), (j))
