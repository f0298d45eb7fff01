// Linux file calls that glibc declares only under _GNU_SOURCE, which Swift's Glibc module does not define.
#ifndef UPLINK_CLINUXIO_H
#define UPLINK_CLINUXIO_H

#include <stdint.h>

/// Starts writeback of the dirty pages of [offset, offset + count) of `fd` without waiting for it
/// (sync_file_range with SYNC_FILE_RANGE_WRITE). 0, or -1 with errno set.
int uplink_start_writeback(int fd, int64_t offset, int64_t count);

/// Writes back the dirty pages of [offset, offset + count) of `fd` and waits until every page of the range is on
/// the device (sync_file_range with WAIT_BEFORE | WRITE | WAIT_AFTER; file metadata is not synced). 0, or -1 with
/// errno set.
int uplink_finish_writeback(int fd, int64_t offset, int64_t count);

/// epoll for a thread that waits for several descriptors to become readable, each known by a tag (Swift's Glibc module
/// does not import <sys/epoll.h>). A new epoll instance (close-on-exec); its descriptor, or -1 with errno set.
int uplink_epoll_create(void);

/// Watches `fd` for input, reported as `tag`. With `oneshot`, one report disables the watch until
/// `uplink_epoll_rearm`. 0, or -1 with errno set.
int uplink_epoll_add(int epoll_fd, int fd, uint32_t tag, int oneshot);

/// Enables a one-shot watch again (any thread may call it, also while another waits). 0, or -1 with errno set.
int uplink_epoll_rearm(int epoll_fd, int fd, uint32_t tag);

/// Waits up to `timeout_ms` (-1: no limit) and stores the tags of up to `max` ready descriptors in `tags`. The
/// count, or -1 with errno set.
int uplink_epoll_wait(int epoll_fd, uint32_t *tags, int max, int timeout_ms);

#endif
