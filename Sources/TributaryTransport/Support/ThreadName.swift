import Foundation

/// Names the calling thread, for `top -H`, gdb and `/proc/…/comm` (Linux keeps 15 bytes).
///
/// Foundation's `Thread.current.name` did not always reach the kernel: a thread started under load
/// kept its creator's name ("…oot.default-qos"), because Foundation applies the name only once it
/// has stored the new thread's handle, which the creator does after the thread may already run.
/// Writing `/proc/thread-self/comm` from the thread itself always does (glibc's `pthread_setname_np`
/// does the same; Swift's Glibc module does not export it).
func nameCurrentThread(_ name: String) {
    let short = String(decoding: name.utf8.prefix(15), as: UTF8.self)
    Thread.current.name = short
    let fd = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
    guard fd >= 0 else { return }
    defer { close(fd) }
    _ = short.withCString { write(fd, $0, strlen($0)) }
}
