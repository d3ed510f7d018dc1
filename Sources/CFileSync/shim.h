#ifndef TRIBUTARY_CFILESYNC_SHIM_H
#define TRIBUTARY_CFILESYNC_SHIM_H
// Linux's sync_file_range (glibc, declared only under _GNU_SOURCE, which Swift's Glibc module is not
// built with): declared here as glibc defines it on 64-bit Linux (off64_t is a 64-bit long).
#include <stdint.h>

extern int sync_file_range(int fd, int64_t offset, int64_t nbytes, unsigned int flags);

/// Starts writing back the dirty pages of bytes [offset, offset + length) of `fd` without waiting
/// for them (SYNC_FILE_RANGE_WRITE = 2): the disk works while the writer goes on, so that a later
/// fdatasync waits only for what was written since. Advisory: returns 0 or -1 with errno (EINVAL,
/// ESPIPE on files where it does not apply); durability still comes from fdatasync alone.
static inline int tributary_start_writeback(int fd, int64_t offset, int64_t length) {
    return sync_file_range(fd, offset, length, 2u);
}
#endif
