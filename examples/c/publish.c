/*
 * publish.c — a publisher fed from C (built and run by `make c-example` against `tributary subscribe`).
 *
 * In the checkout, after `make lib`:
 *
 *   gcc -std=c11 -Wall -Wextra -Iinclude examples/c/publish.c -Llib -ltributary -Wl,-rpath,"$PWD/lib" -lm -o publish
 *   ./publish tcp://127.0.0.1:0 API_KEY [BLOCKS]
 *
 * Binds a publisher, prints "listening on ENDPOINT", adds source 1 "sine" (two float64 channels at
 * 1 kHz: a 50 Hz sine and a 120 Hz cosine, lossless), waits up to 30 s for a subscriber, then pushes
 * BLOCKS (default 20) blocks of 100 samples — channel-major and interleaved in turn, times from the
 * wall clock at the first push — sends the message "publish.c done" and closes. Before that it
 * checks that misuse is refused with the documented status and a message. Exit status 0 when every
 * check holds.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tributary.h"

#define CHANNELS 2
#define SAMPLES 100
#define RATE 1000.0

static int failures = 0;

/* A call that must fail with `expected`. */
static void expect(int status, int expected, const char *what) {
    if (status != expected) {
        fprintf(stderr, "FAIL %s: status %d, expected %d (%s)\n", what, status, expected, tributary_last_error());
        failures++;
    } else {
        printf("refused as expected, %s: %s\n", what, tributary_last_error());
    }
}

int main(int argc, char **argv) {
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: %s BIND API_KEY [BLOCKS]\n", argv[0]);
        return 2;
    }
    int blocks = argc == 4 ? atoi(argv[3]) : 20;
    if (blocks < 1 || blocks > 1000000) {
        fprintf(stderr, "BLOCKS must be 1 to 1000000\n");
        return 2;
    }

    tributary_publisher *publisher = NULL;
    char *endpoint = NULL;
    if (tributary_publisher_open(argv[1], argv[2], "publish.c", &publisher, &endpoint) != TRIBUTARY_OK) {
        fprintf(stderr, "%s\n", tributary_last_error());
        return 1;
    }
    printf("listening on %s\n", endpoint);
    fflush(stdout);
    tributary_free(endpoint);

    tributary_source *sine = NULL;
    if (tributary_source_add(publisher, 1, "sine", RATE, CHANNELS, "sin50,cos120", "V", TRIBUTARY_FLOAT64,
                             1.0, 0.0, -1.0, 1.0, 1, &sine) != TRIBUTARY_OK) {
        fprintf(stderr, "%s\n", tributary_last_error());
        return 1;
    }

    /* Misuse is a status and a message, never a crash. */
    double block[CHANNELS * SAMPLES];
    int16_t counts[CHANNELS * SAMPLES] = {0};
    tributary_source *other = NULL;
    expect(tributary_source_add(publisher, 1, "again", RATE, 1, NULL, "V", TRIBUTARY_FLOAT64, 1, 0, -1, 1, 0, &other),
           TRIBUTARY_E_ARGUMENT, "a duplicate source id");
    expect(tributary_source_add(publisher, 2, "bad", 0.0, 1, NULL, "V", TRIBUTARY_FLOAT64, 1, 0, -1, 1, 0, &other),
           TRIBUTARY_E_ARGUMENT, "a rate of 0 Hz");
    expect(tributary_source_add(publisher, 2, "bad", RATE, 2, "only-one", "V", TRIBUTARY_FLOAT64, 1, 0, -1, 1, 0, &other),
           TRIBUTARY_E_ARGUMENT, "one name for two channels");
    expect(tributary_source_add(publisher, 2, "bad", RATE, 1, NULL, "V", TRIBUTARY_INT16, 0.0, 0, -1, 1, 0, &other),
           TRIBUTARY_E_ARGUMENT, "an int16 scale of 0");
    expect(tributary_source_add(NULL, 2, "bad", RATE, 1, NULL, "V", TRIBUTARY_FLOAT64, 1, 0, -1, 1, 0, &other),
           TRIBUTARY_E_HANDLE, "a NULL publisher");
    expect(tributary_source_push(sine, NULL, TRIBUTARY_FLOAT64, CHANNELS, SAMPLES, TRIBUTARY_CHANNEL_MAJOR,
                                 TRIBUTARY_TIME_AUTO, 1.0), TRIBUTARY_E_ARGUMENT, "NULL samples");
    expect(tributary_source_push(sine, block, TRIBUTARY_FLOAT64, 3, SAMPLES, TRIBUTARY_CHANNEL_MAJOR,
                                 TRIBUTARY_TIME_AUTO, 1.0), TRIBUTARY_E_RANGE, "three channels to a two-channel source");
    expect(tributary_source_push(sine, counts, TRIBUTARY_INT16, CHANNELS, SAMPLES, TRIBUTARY_CHANNEL_MAJOR,
                                 TRIBUTARY_TIME_AUTO, 1.0), TRIBUTARY_E_TYPE, "int16 to a float64 source");
    expect(tributary_source_push(sine, block, TRIBUTARY_FLOAT64, CHANNELS, 0, TRIBUTARY_CHANNEL_MAJOR,
                                 TRIBUTARY_TIME_AUTO, 1.0), TRIBUTARY_E_ARGUMENT, "zero samples");
    expect(tributary_source_push(sine, block, TRIBUTARY_FLOAT64, CHANNELS, UINT64_C(1) << 40, TRIBUTARY_CHANNEL_MAJOR,
                                 TRIBUTARY_TIME_AUTO, 1.0), TRIBUTARY_E_ARGUMENT, "2^40 samples");
    expect(tributary_source_push(sine, block, TRIBUTARY_FLOAT64, CHANNELS, SAMPLES, 7, TRIBUTARY_TIME_AUTO, 1.0),
           TRIBUTARY_E_ARGUMENT, "layout 7");

    /* Data flows to subscribers between their start and stop: wait for one. */
    int subscribers = 0;
    for (int i = 0; i < 3000 && subscribers == 0; i++) {
        tributary_publisher_subscribers(publisher, &subscribers);
        if (subscribers == 0) nanosleep(&(struct timespec){.tv_sec = 0, .tv_nsec = 10000000}, NULL);
    }
    if (subscribers == 0) {
        fprintf(stderr, "no subscriber came within 30 s\n");
        return 1;
    }

    const double pi = 3.14159265358979323846;
    for (int b = 0; b < blocks; b++) {
        int interleaved = b % 2;
        for (int i = 0; i < SAMPLES; i++) {
            double t = (b * SAMPLES + i) / RATE;
            double s = sin(2 * pi * 50 * t), c = 0.5 * cos(2 * pi * 120 * t);
            if (interleaved) {
                block[i * CHANNELS] = s;
                block[i * CHANNELS + 1] = c;
            } else {
                block[i] = s;
                block[SAMPLES + i] = c;
            }
        }
        int status = tributary_source_push(sine, block, TRIBUTARY_FLOAT64, CHANNELS, SAMPLES,
                                           interleaved ? TRIBUTARY_INTERLEAVED : TRIBUTARY_CHANNEL_MAJOR,
                                           TRIBUTARY_TIME_AUTO, 10.0);
        if (status != TRIBUTARY_OK) {
            fprintf(stderr, "FAIL push %d: %s\n", b, tributary_last_error());
            failures++;
        }
    }
    uint64_t pushed = 0, dropped = 0;
    tributary_source_counts(sine, &pushed, &dropped);
    printf("pushed %llu blocks, dropped %llu\n", (unsigned long long)pushed, (unsigned long long)dropped);
    if (pushed != (uint64_t)blocks || dropped != 0) failures++;
    if (tributary_publisher_send_message(publisher, "publish.c done") != TRIBUTARY_OK) {
        fprintf(stderr, "FAIL message: %s\n", tributary_last_error());
        failures++;
    }

    tributary_publisher_close(publisher);
    expect(tributary_source_push(sine, block, TRIBUTARY_FLOAT64, CHANNELS, SAMPLES, TRIBUTARY_CHANNEL_MAJOR,
                                 TRIBUTARY_TIME_AUTO, 1.0), TRIBUTARY_E_HANDLE, "a push after the publisher closed");
    tributary_source_close(sine);
    expect(tributary_source_close(sine), TRIBUTARY_E_HANDLE, "a source closed twice");
    expect(tributary_publisher_close(publisher), TRIBUTARY_E_HANDLE, "a publisher closed twice");
    printf("%s\n", failures == 0 ? "publish.c: all checks passed" : "publish.c: FAILED");
    return failures == 0 ? 0 : 1;
}
