#ifndef UPLINK_CLIBFUZZER_H
#define UPLINK_CLIBFUZZER_H
#include <stddef.h>
#include <stdint.h>

/// libFuzzer's entry point for programs with their own main (compiler-rt's FuzzerInterface.h). Only the
/// `-sanitize=fuzzer` build of uplink-fuzz (fuzz/run.sh) calls it, so only that build links libFuzzer.
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
