import Testing
@testable import TributaryWire

@Test func kindsHaveDistinctNames() {
    #expect(Set(FrameKind.allCases.map(\.description)).count == FrameKind.allCases.count)
}
