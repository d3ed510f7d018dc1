/*
 * subscribe.c — a live subscription through the C interface (built and run by `make c-example`).
 *
 * In the checkout, after `make lib`:
 *
 *   gcc -std=c11 -Wall -Wextra -Iinclude examples/c/subscribe.c -Llib -ltributary -Wl,-rpath,"$PWD/lib" -o subscribe
 *   ./subscribe tcp://127.0.0.1:PORT API_KEY
 *
 * Subscribes to channels 0 and 2 of source 1, pulls packages for about a second and prints what
 * arrives: the configuration, analog blocks (read in place, then copied as float64), gaps and SCCT
 * errors. Also checks that a wrong API key is refused with SCCT error 1. Exit status 0 when every
 * check holds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tributary.h"

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s ADDRESS API_KEY\n", argv[0]);
        return 2;
    }
    int failures = 0;

    /* A refusal is a status, a message and the SCCT code. */
    tributary_subscription *subscription = NULL;
    int status = tributary_subscription_open(argv[1], "not the key", NULL, &subscription);
    printf("wrong key: status %d, SCCT error %d: %s\n", status, tributary_last_scct_error(), tributary_last_error());
    if (status != TRIBUTARY_E_SCCT || tributary_last_scct_error() != 1 || subscription != NULL) failures++;

    status = tributary_subscription_open(argv[1], argv[2], "{\"channels\": [0, 2], \"sources\": [1], \"timeout\": 5}",
                                         &subscription);
    if (status != TRIBUTARY_OK) {
        fprintf(stderr, "open: %s\n", tributary_last_error());
        return 1;
    }
    char *info = NULL;
    if (tributary_subscription_info_json(subscription, &info) == TRIBUTARY_OK) {
        printf("session: %s\n", info);
        tributary_free(info);
    }

    int blocks = 0, configurations = 0;
    uint64_t samples_total = 0;
    for (int i = 0; i < 200 && samples_total < 1000; i++) {
        int kind = 0;
        const char *json = NULL;
        status = tributary_subscription_next(subscription, 1.0, &kind, &json);
        if (status == TRIBUTARY_E_TIMEOUT) continue;
        if (status != TRIBUTARY_OK) {
            fprintf(stderr, "next: %s\n", tributary_last_error());
            failures++;
            break;
        }
        if (kind == TRIBUTARY_KIND_ANALOG) {
            const void *samples = NULL;
            int type = 0;
            uint32_t channels = 0;
            uint64_t count = 0;
            if (tributary_subscription_analog(subscription, &samples, &type, &channels, &count) != TRIBUTARY_OK) {
                failures++;
                break;
            }
            double *values = malloc(channels * count * sizeof *values);
            if (tributary_subscription_analog_copy(subscription, TRIBUTARY_FLOAT64, values, channels * count * sizeof *values)
                != TRIBUTARY_OK) {
                failures++;
            }
            if (type == TRIBUTARY_FLOAT64 && memcmp(samples, values, channels * count * sizeof *values) != 0) failures++;
            if (channels != 2 || strstr(json, "\"filter_id\":1") == NULL) failures++;
            if (blocks == 0) printf("analog: %u channels x %llu samples, first value %g: %.120s\n", channels,
                                    (unsigned long long)count, values[0], json);
            free(values);
            samples_total += count;
            blocks++;
        } else {
            if (kind == TRIBUTARY_KIND_CONFIGURATION) configurations++;
            printf("%s\n", json);
        }
    }
    printf("%d analog blocks, %llu samples per channel, %d configurations\n", blocks, (unsigned long long)samples_total,
           configurations);
    if (samples_total < 1000 || configurations == 0) failures++;
    /* After close, the handle is gone: using it is reported, not undefined. */
    if (tributary_subscription_close(subscription) != TRIBUTARY_OK) failures++;
    int kind = 0;
    if (tributary_subscription_next(subscription, 0.1, &kind, NULL) != TRIBUTARY_E_HANDLE) failures++;
    printf("closed handle: %s\n", tributary_last_error());

    if (failures) {
        fprintf(stderr, "subscribe: %d check(s) failed\n", failures);
        return 1;
    }
    printf("subscribe: all checks passed\n");
    return 0;
}
