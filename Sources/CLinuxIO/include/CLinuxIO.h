// Linux calls that Swift's Glibc module does not declare: those glibc declares only under _GNU_SOURCE
// (sync_file_range, pipe2, posix_spawn's closefrom), and malloc.h's mallopt.
#ifndef UPLINK_CLINUXIO_H
#define UPLINK_CLINUXIO_H

#include <spawn.h>
#include <stdint.h>

/// Starts writeback of the dirty pages of [offset, offset + count) of `fd` without waiting for it
/// (sync_file_range with SYNC_FILE_RANGE_WRITE). 0, or -1 with errno set.
int uplink_start_writeback(int fd, int64_t offset, int64_t count);

/// Writes back the dirty pages of [offset, offset + count) of `fd` and waits until every page of the range is on
/// the device (sync_file_range with WAIT_BEFORE | WRITE | WAIT_AFTER; file metadata is not synced). 0, or -1 with
/// errno set.
int uplink_finish_writeback(int fd, int64_t offset, int64_t count);

/// How many times the calling thread has given up the CPU voluntarily (slept in the kernel: waited for a lock, for
/// I/O, or was throttled), from getrusage(RUSAGE_THREAD); preemptions are not counted. -1 with errno set.
int64_t uplink_thread_voluntary_switches(void);

/// pipe2(fds, O_CLOEXEC): both ends close-on-exec from their creation, so a child another thread spawns meanwhile
/// cannot inherit them. 0, or -1 with errno set.
int uplink_pipe_cloexec(int fds[2]);

/// Makes a child spawned with `actions` close every descriptor from `lowest` up (glibc 2.34's
/// posix_spawn_file_actions_addclosefrom_np). 0, or an errno value (ENOSYS where the C library lacks it).
int uplink_spawn_close_from(posix_spawn_file_actions_t *actions, int lowest);

/// Sets glibc's M_MMAP_THRESHOLD and M_TRIM_THRESHOLD (bytes) with mallopt; 1 when both were accepted, 0 otherwise
/// (also where the C library is not glibc).
int uplink_set_malloc_thresholds(int mmap_threshold, int trim_threshold);

#endif
