#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/epoll.h>

#include "CLinuxIO.h"

int uplink_start_writeback(int fd, int64_t offset, int64_t count) {
    return sync_file_range(fd, offset, count, SYNC_FILE_RANGE_WRITE);
}

int uplink_finish_writeback(int fd, int64_t offset, int64_t count) {
    return sync_file_range(fd, offset, count,
                           SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER);
}

int uplink_epoll_create(void) {
    return epoll_create1(EPOLL_CLOEXEC);
}

int uplink_epoll_add(int epoll_fd, int fd, uint32_t tag, int oneshot) {
    struct epoll_event event = {.events = EPOLLIN | (oneshot ? EPOLLONESHOT : 0), .data = {.u32 = tag}};
    return epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &event);
}

int uplink_epoll_rearm(int epoll_fd, int fd, uint32_t tag) {
    struct epoll_event event = {.events = EPOLLIN | EPOLLONESHOT, .data = {.u32 = tag}};
    return epoll_ctl(epoll_fd, EPOLL_CTL_MOD, fd, &event);
}

int uplink_epoll_wait(int epoll_fd, uint32_t *tags, int max, int timeout_ms) {
    struct epoll_event events[8];
    if (max > 8) max = 8;
    int count = epoll_wait(epoll_fd, events, max, timeout_ms);
    for (int i = 0; i < count; i++) tags[i] = events[i].data.u32;
    return count;
}
