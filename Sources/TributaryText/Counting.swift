/// "1 frame", "2 frames", "0 frames": a count with its noun in the right number — the one helper for
/// every count that the command line and the descriptions of frames print.
/// - Parameters:
///   - count: how many.
///   - singular: the noun for one ("frame", "channel").
///   - plural: the noun for any other count, when it is not `singular` + "s" ("indexes").
package func counted(_ count: some BinaryInteger, _ singular: String, _ plural: String? = nil) -> String {
    "\(count) " + (count == 1 ? singular : plural ?? singular + "s")
}
