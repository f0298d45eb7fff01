// The journald source's view of libsystemd's sd-journal. libsystemd.so.0 is not linked: it is loaded with dlopen the
// first time a journald source opens a journal, so an agent without one (and every collector) does not load it and
// its five dependencies (libgcrypt, libgpg-error, liblzma, liblz4, libcap) at start.
#ifndef UPLINK_CSYSTEMD_H
#define UPLINK_CSYSTEMD_H

#include <systemd/sd-journal.h>

/// Loads libsystemd.so.0 once (thread-safe). 0 when it is loaded; -ENOSYS when it cannot be, and then
/// `uplink_systemd_load_error()` says why. Every `uplink_sd_journal_*` function returns -ENOSYS (or does nothing)
/// while the library is not loaded.
int uplink_systemd_load(void);

/// dlopen's message when `uplink_systemd_load()` failed, else NULL.
const char *uplink_systemd_load_error(void);

// The sd-journal functions the source uses, same arguments and results as libsystemd's.
int uplink_sd_journal_open(sd_journal **ret, int flags);
int uplink_sd_journal_open_directory(sd_journal **ret, const char *path, int flags);
void uplink_sd_journal_close(sd_journal *j);
int uplink_sd_journal_previous(sd_journal *j);
int uplink_sd_journal_next(sd_journal *j);
int uplink_sd_journal_get_realtime_usec(sd_journal *j, uint64_t *ret);
int uplink_sd_journal_set_data_threshold(sd_journal *j, size_t sz);
int uplink_sd_journal_enumerate_data(sd_journal *j, const void **data, size_t *l);
void uplink_sd_journal_restart_data(sd_journal *j);
int uplink_sd_journal_add_match(sd_journal *j, const void *data, size_t size);
int uplink_sd_journal_seek_head(sd_journal *j);
int uplink_sd_journal_seek_tail(sd_journal *j);
int uplink_sd_journal_seek_realtime_usec(sd_journal *j, uint64_t usec);
int uplink_sd_journal_seek_cursor(sd_journal *j, const char *cursor);
int uplink_sd_journal_get_cursor(sd_journal *j, char **cursor);
int uplink_sd_journal_test_cursor(sd_journal *j, const char *cursor);
int uplink_sd_journal_get_fd(sd_journal *j);
int uplink_sd_journal_get_timeout(sd_journal *j, uint64_t *timeout_usec);
int uplink_sd_journal_process(sd_journal *j);

#endif
