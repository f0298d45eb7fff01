#define _GNU_SOURCE
#include <fcntl.h>
#include <sys/resource.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "CLinuxIO.h"

int uplink_start_writeback(int fd, int64_t offset, int64_t count) {
    return sync_file_range(fd, offset, count, SYNC_FILE_RANGE_WRITE);
}

int uplink_finish_writeback(int fd, int64_t offset, int64_t count) {
    return sync_file_range(fd, offset, count,
                           SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER);
}

int64_t uplink_thread_voluntary_switches(void) {
    struct rusage usage;
    if (getrusage(RUSAGE_THREAD, &usage) != 0) return -1;
    return usage.ru_nvcsw;
}

int uplink_set_malloc_thresholds(int mmap_threshold, int trim_threshold) {
#ifdef __GLIBC__
    return mallopt(M_MMAP_THRESHOLD, mmap_threshold) == 1 && mallopt(M_TRIM_THRESHOLD, trim_threshold) == 1;
#else
    (void)mmap_threshold;
    (void)trim_threshold;
    return 0;
#endif
}
