/*
 * read_capture.c — the C interface of Tributary from plain C (built and run by `make c-example`).
 *
 * In the checkout, after `make lib`:
 *
 *   gcc -std=c11 -Wall -Wextra -Iinclude examples/c/read_capture.c -Llib -ltributary -Wl,-rpath,"$PWD/lib" -lm -o read_capture
 *   ./read_capture run.tcap
 *
 * Opens a capture, prints its sources and channels, reads the first channel of every source in
 * physical units and in stored units, runs the `analyze` pipeline on the file, and shows that misuse
 * is reported with a status and a message rather than a crash. Exit status 0 when every check holds.
 */
#define _DEFAULT_SOURCE 1 /* M_PI: strict -std=c11 leaves out what math.h defines beyond ISO C */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tributary.h"

static int failures = 0;

#define CHECK(call)                                                                                    \
    do {                                                                                               \
        int status_ = (call);                                                                          \
        if (status_ != TRIBUTARY_OK) {                                                                 \
            fprintf(stderr, "%s:%d: %s -> %d: %s\n", __FILE__, __LINE__, #call, status_, tributary_last_error()); \
            return 1;                                                                                  \
        }                                                                                              \
    } while (0)

#define EXPECT(condition)                                                                              \
    do {                                                                                               \
        if (!(condition)) {                                                                            \
            fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #condition);                  \
            failures++;                                                                                \
        }                                                                                              \
    } while (0)

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s CAPTURE.tcap\n", argv[0]);
        return 2;
    }
    printf("libtributary %s, API %d (header %d)\n", tributary_version(), tributary_api_version(), TRIBUTARY_API_VERSION);
    EXPECT(tributary_api_version() == TRIBUTARY_API_VERSION);

    tributary_capture *capture = NULL;
    CHECK(tributary_capture_open(argv[1], &capture));

    /* Everything in one JSON document; the caller frees it. */
    char *info = NULL;
    CHECK(tributary_capture_info_json(capture, &info));
    printf("info: %.200s%s\n", info, strlen(info) > 200 ? "..." : "");
    tributary_free(info);

    size_t sources = 0;
    CHECK(tributary_capture_source_count(capture, &sources));
    for (size_t i = 0; i < sources; i++) {
        uint32_t id = 0, channels = 0;
        uint64_t samples = 0;
        int type = 0;
        double rate = 0;
        CHECK(tributary_capture_source_id(capture, i, &id));
        CHECK(tributary_capture_shape(capture, id, &channels, &samples, &type, &rate));
        size_t gaps = 0;
        uint64_t missing = 0;
        CHECK(tributary_capture_gaps(capture, id, &gaps, &missing));
        printf("source %u: %u channels x %llu samples, type %d, %g Hz, %zu gaps (%llu frames missing)\n", id, channels,
               (unsigned long long)samples, type, rate, gaps, (unsigned long long)missing);
        if (channels == 0 || samples == 0) continue;

        /* Channel 0, all samples, in physical units. */
        double *values = malloc(samples * sizeof *values);
        uint64_t got = 0;
        uint32_t first_channel = 0;
        CHECK(tributary_capture_read(capture, id, &first_channel, 1, 0, samples, TRIBUTARY_FLOAT64, values,
                                     samples * sizeof *values, &got));
        EXPECT(got == samples);
        double sum = 0, square = 0;
        for (uint64_t s = 0; s < got; s++) { sum += values[s]; square += values[s] * values[s]; }
        printf("  channel 0: mean %.6g, rms %.6g\n", sum / (double)got, sqrt(square / (double)got));

        /* A sample range in the middle equals the same samples of the full read. */
        if (samples > 10) {
            double middle[5];
            CHECK(tributary_capture_read(capture, id, &first_channel, 1, samples / 2, 5, TRIBUTARY_FLOAT64, middle,
                                         sizeof middle, &got));
            EXPECT(got == 5 && memcmp(middle, values + samples / 2, sizeof middle) == 0);
        }
        /* Stored int16 counts, when that is how the source is stored. */
        if (type == TRIBUTARY_INT16) {
            int16_t counts[4];
            CHECK(tributary_capture_read(capture, id, &first_channel, 1, 0, 4, TRIBUTARY_INT16, counts, sizeof counts, &got));
            printf("  channel 0 counts: %d %d %d %d\n", counts[0], counts[1], counts[2], counts[3]);
        } else {
            int16_t counts[4];
            EXPECT(tributary_capture_read(capture, id, &first_channel, 1, 0, 4, TRIBUTARY_INT16, counts, sizeof counts, &got)
                   == TRIBUTARY_E_TYPE);
        }
        /* Misuse is a status and a message. */
        uint32_t no_such_channel = channels;
        EXPECT(tributary_capture_read(capture, id, &no_such_channel, 1, 0, 1, TRIBUTARY_FLOAT64, values, 8, &got)
               == TRIBUTARY_E_RANGE);
        printf("  out-of-range channel: %s\n", tributary_last_error());
        EXPECT(tributary_capture_read(capture, id, NULL, 0, 0, samples, TRIBUTARY_FLOAT64, values, 8, &got)
               == TRIBUTARY_E_BUFFER);
        free(values);
    }

    /* Non-analog packages (configurations, messages, …) as JSON, in file order. */
    char *package = NULL;
    int packages = 0;
    while (tributary_capture_next_package(capture, 0, &package) == TRIBUTARY_OK) {
        if (packages == 0) printf("first package: %.120s...\n", package);
        tributary_free(package);
        packages++;
    }
    EXPECT(package == NULL);
    printf("%d non-analog packages\n", packages);

    CHECK(tributary_capture_close(capture));
    size_t count = 0;
    EXPECT(tributary_capture_source_count(capture, &count) == TRIBUTARY_E_HANDLE);
    printf("closed handle: %s\n", tributary_last_error());
    EXPECT(tributary_capture_close(capture) == TRIBUTARY_E_HANDLE);
    EXPECT(tributary_capture_open(NULL, &capture) == TRIBUTARY_E_ARGUMENT && capture == NULL);
    EXPECT(tributary_capture_open("/nonexistent.tcap", &capture) == TRIBUTARY_E_IO);

    /* The `analyze` pipeline: the same JSON document as `tributary analyze FILE --json`. */
    char *json = NULL;
    CHECK(tributary_analyze_file(argv[1], "{\"stats\": true, \"welch\": 256}", &json));
    printf("analysis: %.160s...\n", json);
    tributary_free(json);
    EXPECT(tributary_analyze_file(argv[1], "{\"welch\": -1}", &json) == TRIBUTARY_E_ARGUMENT && json == NULL);
    printf("bad option: %s\n", tributary_last_error());

    /* …and on a buffer: a 1 kHz tone sampled at 48 kHz. */
    enum { N = 4800 };
    static double tone[N];
    for (int s = 0; s < N; s++) tone[s] = sin(2 * M_PI * 1000.0 * s / 48000.0);
    CHECK(tributary_analyze_buffer(tone, 1, N, 48000.0, "{\"measure\": [\"tone\", \"thd\"]}", &json));
    EXPECT(strstr(json, "\"frequency\":1000") != NULL || strstr(json, "\"frequency\":999.9") != NULL);
    printf("tone: %.200s...\n", strstr(json, "\"tone\"") ? strstr(json, "\"tone\"") : json);
    tributary_free(json);

    if (failures) {
        fprintf(stderr, "read_capture: %d check(s) failed\n", failures);
        return 1;
    }
    printf("read_capture: all checks passed\n");
    return 0;
}
