/*
 * tributary.h — the C interface of Tributary (libtributary.so).
 *
 * One implementation, many doors: the capture reader, the `analyze` pipeline, the subscriber and the
 * publisher are Swift code; this header is how C, LabVIEW (Call Library Function Node), MATLAB (loadlibrary),
 * Python (ctypes), Julia (ccall) and others reach them. docs/C_API.md has the details and examples.
 *
 * Rules of the interface
 *  - Every function that can fail returns an int status: TRIBUTARY_OK (0) or a TRIBUTARY_E_* code.
 *    The message of the last failure on the calling thread is tributary_last_error() (or copied into
 *    a caller buffer by tributary_last_error_copy()). Nothing else ever escapes: no exception, no
 *    abort on a caller's mistake. Every pointer argument is checked for NULL, every handle against
 *    the table of open handles (a closed or made-up handle gives TRIBUTARY_E_HANDLE), every index
 *    and range against the data.
 *  - Handles are opaque (tributary_capture *, tributary_subscription *, tributary_publisher *,
 *    tributary_source *). The caller owns what an
 *    *_open function returns and gives it back with the matching *_close; after that the handle is
 *    invalid (using it again is reported, not undefined).
 *  - Strings returned through a `char **` out-parameter are allocated by the library and owned by
 *    the caller, who frees them with tributary_free(). On failure the out-parameter is set to NULL.
 *  - Sample buffers are the caller's: the library writes into them, never keeps them.
 *  - Data matrices are row-major (C order) channels × samples: channel k starts at element
 *    k * sample_count. In MATLAB that is a samples × channels matrix; in LabVIEW a 2D array
 *    [channels][samples].
 *  - A handle may be used from any thread, one call at a time per handle (calls on one handle are
 *    serialised internally). Different handles are independent.
 *
 * LabVIEW (Call Library Function Node, C calling convention): handles as "Unsigned Pointer-sized
 * Integer"; `const char *` inputs as "String, C String Pointer"; sample buffers as "Array Data
 * Pointer" of an array preallocated [channels][samples]; `char **` outputs as a pointer-sized
 * integer passed by pointer, copied into a LabVIEW string with tributary_string_copy() (call it
 * with size 0 to get the length) and then given back with tributary_free(); error text with
 * tributary_last_error_copy(). No callbacks: subscriptions are pulled with
 * tributary_subscription_next(). Publishing: a DAQmx Read's 2D array [channels][samples] goes to
 * tributary_source_push as "Array Data Pointer" with TRIBUTARY_CHANNEL_MAJOR.
 * MATLAB: loadlibrary('libtributary.so', 'tributary.h'); handles are lib.pointer objects
 * (libpointer('voidPtr') for the out-parameter, or let calllib return them); char ** outputs as
 * libpointer('voidPtrPtr'), read with tributary_string_copy into a uint8 buffer; a matrix read into
 * a preallocated double buffer of numel channels*samples arrives row-major, i.e. reshape(buffer,
 * samples, channels).
 * docs/C_API.md has the full walk-through for C, LabVIEW, MATLAB and Python.
 */
#ifndef TRIBUTARY_H
#define TRIBUTARY_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The version of this interface; tributary_api_version() returns the library's. */
#define TRIBUTARY_API_VERSION 1

/* ---- Status codes ---------------------------------------------------------------------------- */

#define TRIBUTARY_OK           0  /**< success */
#define TRIBUTARY_E_ARGUMENT   1  /**< NULL where a pointer is required, or a value outside its domain (bad options, …) */
#define TRIBUTARY_E_HANDLE     2  /**< NULL, unknown or closed handle, or a handle of another kind */
#define TRIBUTARY_E_RANGE      3  /**< a source, channel or sample range that the data does not have */
#define TRIBUTARY_E_IO         4  /**< the operating system refused (cannot open, read, connect) */
#define TRIBUTARY_E_FORMAT     5  /**< not a capture, a damaged one, or data that cannot be presented as asked */
#define TRIBUTARY_E_TYPE       6  /**< the sample type asked for is not available (int16 counts of float data) */
#define TRIBUTARY_E_ANALYSIS   7  /**< the analysis failed (no analog data, a channel missing, too few samples) */
#define TRIBUTARY_E_TIMEOUT    8  /**< nothing arrived within the timeout (the subscription is still usable) */
#define TRIBUTARY_E_END        9  /**< no more packages (end of capture, closed subscription) */
#define TRIBUTARY_E_SCCT      10  /**< the publisher reported an SCCT error (its code is in the package) */
#define TRIBUTARY_E_BUFFER    11  /**< a caller buffer is too small */
#define TRIBUTARY_E_DROPPED   12  /**< a live source's block or a message was not taken: the publisher's queue was full (counted) */
#define TRIBUTARY_E_INTERNAL  99  /**< a bug in Tributary: report it with the message */

/* ---- Sample types (the values of the wire format) -------------------------------------------- */

#define TRIBUTARY_FLOAT64 1  /**< double: physical values (int16 / int32 counts scaled: count * scale + offset) */
#define TRIBUTARY_FLOAT32 2  /**< float: only for sources stored as float32 */
#define TRIBUTARY_INT16   3  /**< int16 counts as stored: only for sources stored as int16 */
#define TRIBUTARY_INT32   4  /**< int32 counts as stored (24-bit delta-sigma codes, S24/S32 sound cards): only for sources stored as int32 */

/* ---- Package kinds (bit 1 << kind in the kind masks) ----------------------------------------- */
/* The kinds a subscription hands out ("delivered" in tributary_kinds_json); declared once by the
 * library (TributaryWire's FrameKind), which a test checks these numbers and names against. */

#define TRIBUTARY_KIND_CONFIGURATION 1
#define TRIBUTARY_KIND_ERROR         2
#define TRIBUTARY_KIND_ANALOG        3
#define TRIBUTARY_KIND_DIGITAL       4
#define TRIBUTARY_KIND_MESSAGE       5
#define TRIBUTARY_KIND_XML           6
#define TRIBUTARY_KIND_FILE          7
#define TRIBUTARY_KIND_IMAGE         8
#define TRIBUTARY_KIND_ARRAY         9
#define TRIBUTARY_KIND_GAP          21
#define TRIBUTARY_KIND_CLOSE        22  /**< the publisher ended the session normally: {"code": 0, "reason"} */
#define TRIBUTARY_KIND_PROPERTIES  129  /**< a source's properties: {"source": {key: value}, "channels": [{"index", "properties"}]} */

/* ---- Library ---------------------------------------------------------------------------------- */

/** The library's version, e.g. "1.0.0" (static; never freed). */
const char *tributary_version(void);

/** The interface version the library implements (compare with TRIBUTARY_API_VERSION). */
int tributary_api_version(void);

/** The name of package kind `kind` (docs/PROTOCOL.md §2.2: "configuration", "analog-filter",
 *  "keepalive", …), the "kind" of the JSON objects; *name is static (never freed). Covers every
 *  declared kind, also those without a TRIBUTARY_KIND_* macro. E_ARGUMENT (and *name = NULL) for a
 *  number that is no declared kind, or a NULL name. */
int tributary_kind_name(int kind, const char **name);

/** Every declared package kind (docs/PROTOCOL.md §2.2), in number order, as a JSON array of
 *  {"number", "name", "sender": "publisher"|"subscriber"|"either", "data" (a data kind: counted by
 *  replay credit, filtered by source selection), "application" (content an application sends itself:
 *  the tool's --message/--xml/--file/--image/--array), "delivered" (a subscription hands it out: it
 *  has a TRIBUTARY_KIND_* macro)}. The caller frees *json with tributary_free. E_ARGUMENT for a NULL json. */
int tributary_kinds_json(char **json);

/** The message of the last failed call on the calling thread ("" if none yet). Never NULL; valid
 *  until the next failing call on this thread. Messages name the function and the problem. */
const char *tributary_last_error(void);

/** Copies the last error message into buffer (at most size - 1 bytes plus a NUL; buffer may be NULL
 *  when size is 0) and returns its full length in bytes (without the NUL). */
size_t tributary_last_error_copy(char *buffer, size_t size);

/** Frees a string the library returned through a `char **` (NULL is allowed). */
void tributary_free(void *pointer);

/** Copies a NUL-terminated string into buffer (at most size - 1 bytes plus a NUL) and returns its
 *  full length: for LabVIEW and MATLAB, which read library-allocated strings awkwardly. */
size_t tributary_string_copy(const char *string, char *buffer, size_t size);

/* ---- Captures (.tcap) ------------------------------------------------------------------------- */

typedef struct tributary_capture tributary_capture;

/** Opens a capture for reading (a crashed writer's capture is recovered, damaged chunks are skipped
 *  and listed). *capture receives the handle (NULL on failure). E_IO: cannot read the file;
 *  E_FORMAT: not a capture. Close it with tributary_capture_close(). */
int tributary_capture_open(const char *path, tributary_capture **capture);

/** Closes a capture. The handle is invalid afterwards; closing it again gives E_HANDLE. */
int tributary_capture_close(tributary_capture *capture);

/** Everything about the capture as a JSON object (caller frees *json with tributary_free):
 *  {"path", "recovered", "damage": [text], "sources": [{"id", "name", "device_type", "sample_rate"
 *  (null when not one rate), "sample_type" ("float64"|"float32"|"int16"|"int32"|null), "channel_count",
 *  "samples", "frames", "chunks", "first_time_ns", "last_time_ns", "channels": [{"row", "index",
 *  "name", "unit", "sample_rate", "min", "max", "scale", "offset"}], "lines": [{"index", "name"}],
 *  "gaps": [{"first_missing_sequence", "missing_count", "cause", "time_ns"}]}]} */
int tributary_capture_info_json(tributary_capture *capture, char **json);

/** Number of sources (count). */
int tributary_capture_source_count(tributary_capture *capture, size_t *count);

/** The id of the source at position 0 .. count-1 (ascending ids). E_RANGE past the end. */
int tributary_capture_source_id(tributary_capture *capture, size_t position, uint32_t *id);

/** The analog shape of a source: channels stored, samples per channel, TRIBUTARY_FLOAT64/FLOAT32/
 *  INT16 (0 when the source has no analog data), sampling rate (NaN when not one configured rate).
 *  Any out-pointer may be NULL. E_RANGE: no such source. */
int tributary_capture_shape(tributary_capture *capture, uint32_t source, uint32_t *channels,
                            uint64_t *samples, int *sample_type, double *sample_rate);

/** Gap records of a source (frames known to be lost): how many records and how many frames they
 *  say are missing. Either out-pointer may be NULL. */
int tributary_capture_gaps(tributary_capture *capture, uint32_t source, size_t *gaps, uint64_t *missing_frames);

/** Reads samples [first_sample, first_sample + sample_count) of some channels of a source into the
 *  caller's buffer, row-major: channel k of the selection at element k * sample_count.
 *   channels: rows 0 .. channels-1 of the source (positions in its stored channel list, see
 *             "row" in the JSON), in any order, repeats allowed; NULL with channel_count 0 = all.
 *   sample_type: TRIBUTARY_FLOAT64 (physical values, any source) or the stored type (bit-exact
 *             float32, or int16 / int32 counts); anything else gives E_TYPE.
 *   buffer_bytes: must be at least channels × sample_count × element size (E_BUFFER otherwise).
 *   *samples_read (may be NULL): samples per channel written; fewer than sample_count when the data
 *             ends first (the rest of each row is left untouched).
 *  Samples are numbered as the analog frames follow each other (as `tributary export` writes them).
 *  E_RANGE: unknown source or channel; E_FORMAT: a damaged chunk in the range, or frames that
 *  change channels, format or scaling within it. */
int tributary_capture_read(tributary_capture *capture, uint32_t source, const uint32_t *channels,
                           size_t channel_count, uint64_t first_sample, uint64_t sample_count,
                           int sample_type, void *buffer, size_t buffer_bytes, uint64_t *samples_read);

/** The time of samples [first_sample, first_sample + sample_count) of a source (numbered as
 *  tributary_capture_read numbers them), in seconds since the source's first sample, into the
 *  caller's array: each analog frame's recorded time (its timestamp_ns) plus k / rate for its k-th
 *  sample, rate being the one sampling rate the configuration gives the source's channels. Samples
 *  after a gap (frames lost, a publisher stopped and restarted) are at the time they were recorded,
 *  not where an even clock would put them: these are the times of `tributary export --format csv
 *  --time-column`, computed by the same code.
 *   buffer_bytes: must be at least sample_count × 8 (E_BUFFER otherwise).
 *   *samples_read (may be NULL): times written; fewer than sample_count when the data ends first.
 *  With sample_count 0 (seconds may then be NULL) the call only checks that the source's samples
 *  have times. E_RANGE: unknown source, or one without analog data; E_FORMAT: no single sampling
 *  rate (the samples have numbers but no times), a damaged chunk in the range, or a chunk whose
 *  frames do not hold the samples its record says. Only the frame headers are decoded, not the
 *  samples. */
int tributary_capture_times(tributary_capture *capture, uint32_t source, uint64_t first_sample,
                            uint64_t sample_count, double *seconds, size_t buffer_bytes, uint64_t *samples_read);

/** The next package of the capture that is not analog data (configurations, errors, digital
 *  lines, messages, XML, file and image chunks, arrays, …), in file order, as the JSON object of
 *  `tributary inspect --json` ({"kind", "source_id", "sequence", "timestamp_ns", "filter_id",
 *  "flags", "size", "content": {...}}); file and image content is base64. kind_mask: bits
 *  1 << TRIBUTARY_KIND_* to select kinds, 0 for every kind but analog. Returns E_END after the last
 *  one (and *json = NULL). The caller frees *json with tributary_free. */
int tributary_capture_next_package(tributary_capture *capture, uint32_t kind_mask, char **json);

/** Restarts tributary_capture_next_package from the beginning. */
int tributary_capture_rewind(tributary_capture *capture);

/** Writes the capture's analog data to the file path as `tributary export CAPTURE --format FORMAT
 *  --out PATH` does with the same options: the same library code on the path the capture was
 *  opened with (read afresh, as the tool reads it; a relative path as it was when opened), so the
 *  same bytes and the same refusals. A relative path here is taken from the working directory now.
 *   format: "npy", "csv", "wav", "tdms", "xdf" or "hdf5".
 *   options: NULL, "" or a JSON object whose members are the command's options: "source" (an id;
 *             default the lowest id with analog data, for tdms/xdf/hdf5 every source), "channels"
 *             (channel indexes as configured, not rows: "0-3", "0,2" or an array), "start" and
 *             "duration" (seconds >= 0), "counts", "time_column", "allow_damage" and "replace"
 *             (true or false; replace is --force). An unknown member or one of the wrong type
 *             gives E_ARGUMENT.
 *   report: NULL, or receives (caller frees with tributary_free) {"path", "format", "sources":
 *             [{"source", "channels", "samples"}], "warnings": [text]}: what `export` prints, and
 *             what it warns of on stderr.
 *  The file is written beside path and renamed over it once complete: a failure leaves nothing.
 *  E_ARGUMENT: bad options, or path exists (without "replace"), is a directory or is the capture;
 *  E_RANGE: no such source or channel, or the export would not fit in the memory available;
 *  E_TYPE: "counts" of sources stored as float; E_FORMAT: a damaged capture (without
 *  "allow_damage"; the message lists the damage), or data that cannot be written as asked (no
 *  single rate for "start" or "time_column", WAV without an integer rate); E_IO: cannot write. */
int tributary_capture_export(tributary_capture *capture, const char *path, const char *format,
                             const char *options, char **report);

/* ---- Analysis (the `tributary analyze` pipeline) -------------------------------------------- */

/** Analyses a file (capture, NPY or frame file) as `tributary analyze FILE --json` does and returns
 *  the same JSON document (caller frees *json with tributary_free). options: NULL, "" or a JSON
 *  object whose members are the command's options: "rate", "stats", "welch", "overlap", "window",
 *  "detrend", "average", "scaling", "spectrum", "measure" (comma list or array), "harmonics",
 *  "fold_aliases", "measure_window", "channels" ("0-3", "0,2" or an array), "int16_scale",
 *  "rigor", and "arrays": how the Welch and spectrum arrays are written — "json" (numbers, as the
 *  command prints them; the default), "base64" (one string per array) or "block" (float64 values
 *  after the text's NUL in the same allocation, the document naming each array's offset and count:
 *  docs/C_API.md); e.g. {"welch": 1024, "measure": "thd,sinad"}. Unknown members are E_ARGUMENT.
 *  E_ANALYSIS: the file could not be analysed (the message says why, as the command does). */
int tributary_analyze_file(const char *path, const char *options, char **json);

/** Analyses a caller's float64 matrix, row-major channels × samples_per_channel, sampled at rate Hz
 *  (an option "rate" overrides it), as `analyze` analyses an NPY file of that array: one source
 *  with id 1, named by the option "name" (default "buffer"), which is also the document's "file". */
int tributary_analyze_buffer(const double *samples, size_t channels, size_t samples_per_channel,
                             double rate, const char *options, char **json);

/* ---- Digital filters (docs/C_API.md "Digital filters", docs/SIGNAL.md) ------------------------ */

/* scipy.signal's design and filtering functions, equal to scipy's results to rounding. Arrays are
 * float64 and the caller's; an n-d array filtered along one axis is passed as the dimensions
 * (outer, length, inner) of its C-ordered memory: sample k of line (o, i) is element
 * (o * length + k) * inner + i (a matrix channels × samples filtered along its rows: outer =
 * channels, inner = 1). Bad counts, frequencies, orders or coefficients are E_ARGUMENT with a
 * message saying which and why. */

#define TRIBUTARY_PAD_NONE      0  /**< filtfilt padtype None: no extension */
#define TRIBUTARY_PAD_ODD       1  /**< padtype 'odd' (scipy's default): point reflection about the end sample */
#define TRIBUTARY_PAD_EVEN      2  /**< padtype 'even': mirror reflection */
#define TRIBUTARY_PAD_CONSTANT  3  /**< padtype 'constant': the end sample repeated */

#define TRIBUTARY_FILTER_SOS    0  /**< tributary_iir_design output: sections × 6 (b0 b1 b2 a0 a1 a2) */
#define TRIBUTARY_FILTER_BA     1  /**< tributary_iir_design output: b then a, each order + 1 (2·order + 1 for bands) */

/** Designs a digital IIR filter as scipy.signal.iirfilter: family "butter", "cheby1" (pass-band ripple
 *  rp dB), "cheby2" (stop-band attenuation rs dB), "ellip" (both), "bessel" (norm 'phase', order at
 *  most 14) or "bessel_delay" (norm 'delay'); unused rp/rs are ignored; order 0 to 500; wn one
 *  critical frequency (two for band-pass and band-stop), as fractions of Nyquist when fs is 0, else in
 *  Hz for sampling rate fs; btype "lowpass", "highpass", "bandpass", "bandstop" (or scipy's short
 *  names). Writes the coefficients of output TRIBUTARY_FILTER_SOS or _BA; *count receives their number,
 *  also with E_BUFFER when capacity (in values) is too small. */
int tributary_iir_design(const char *family, int order, const double *wn, size_t wn_count, const char *btype,
                         double rp, double rs, double fs, int output, double *coefficients, size_t capacity,
                         size_t *count);

/** A second-order notch (scipy.signal.iirnotch) at w0 Hz for sampling rate fs (2 for fractions of
 *  Nyquist), quality factor q: writes b[3] and a[3]. */
int tributary_iirnotch(double w0, double q, double fs, double *b, double *a);

/** A linear-phase FIR filter by the window method (scipy.signal.firwin): numtaps taps; cutoff_count
 *  edges in Hz for sampling rate fs (2 for fractions of Nyquist), strictly increasing in (0, fs/2);
 *  window "hamming", "hann", "blackman", "boxcar" or "kaiser" (shape beta); a width (Hz) other than NaN
 *  chooses a Kaiser window for that transition width instead; pass_zero 1 to pass DC; scale 1 for unit
 *  gain at the centre of the first pass band. Writes numtaps values to taps. */
int tributary_firwin(size_t numtaps, const double *cutoff, size_t cutoff_count, const char *window, double beta,
                     double width, int pass_zero, int scale, double fs, double *taps);

/** scipy.signal.sosfilt along one axis: sos holds sections × 6 coefficients (every a0 exactly 1).
 *  zi (NULL: zeros) is the initial state shaped (sections, outer, 2, inner); the final state goes to zf
 *  (NULL: not wanted; may be zi). y may be x. */
int tributary_sosfilt(const double *sos, size_t sections, const double *x, double *y, size_t outer, size_t length,
                      size_t inner, const double *zi, double *zf);

/** scipy.signal.lfilter along one axis through b/a (a[0] not 0), direct form II transposed; zi and zf
 *  shaped (outer, K - 1, inner), K = max(b_count, a_count). */
int tributary_lfilter(const double *b, size_t b_count, const double *a, size_t a_count, const double *x, double *y,
                      size_t outer, size_t length, size_t inner, const double *zi, double *zf);

/** scipy.signal.sosfiltfilt along one axis: forward and backward, padded by padtype TRIBUTARY_PAD_*,
 *  padlen samples (-1: scipy's default, 3 × (2·sections + 1 less first-order sections)); length must
 *  exceed the padding. y may be x. */
int tributary_sosfiltfilt(const double *sos, size_t sections, const double *x, double *y, size_t outer, size_t length,
                          size_t inner, int padtype, int64_t padlen);

/** scipy.signal.filtfilt (method 'pad') along one axis; padlen -1 is 3 × max(b_count, a_count). */
int tributary_filtfilt(const double *b, size_t b_count, const double *a, size_t a_count, const double *x, double *y,
                       size_t outer, size_t length, size_t inner, int padtype, int64_t padlen);

/** scipy.signal.sosfilt_zi: the steady state of a unit step, sections × 2 values to zi. */
int tributary_sosfilt_zi(const double *sos, size_t sections, double *zi);

/** scipy.signal.lfilter_zi: the steady state of a unit step, *count values to zi (room for
 *  max(b_count, a_count) - 1; fewer when a has leading zeros). */
int tributary_lfilter_zi(const double *b, size_t b_count, const double *a, size_t a_count, double *zi, size_t *count);

/* Rate change (scipy.signal.upfirdn, resample_poly, decimate) along one axis of a C-ordered array seen
 * as (outer, length, inner). The output y holds outer × out_length × inner values and must not
 * overlap x; out_length must be the length the _length functions give (else TRIBUTARY_E_ARGUMENT).
 * up, down and q are from 1 to 2^20. */
#define TRIBUTARY_EXT_CONSTANT       0  /**< extension mode 'constant': cval beyond both ends (default, 0) */
#define TRIBUTARY_EXT_SYMMETRIC      1  /**< 'symmetric': mirrored including the end sample */
#define TRIBUTARY_EXT_EDGE           2  /**< 'edge': the end sample repeated */
#define TRIBUTARY_EXT_SMOOTH         3  /**< 'smooth': the line through the two end samples (length >= 2) */
#define TRIBUTARY_EXT_WRAP           4  /**< 'wrap': periodic */
#define TRIBUTARY_EXT_REFLECT        5  /**< 'reflect': mirrored about the end sample (length >= 2) */
#define TRIBUTARY_EXT_ANTISYMMETRIC  6  /**< 'antisymmetric': symmetric with the sign flipped */
#define TRIBUTARY_EXT_ANTIREFLECT    7  /**< 'antireflect': point reflection about the end sample (length >= 2) */
#define TRIBUTARY_EXT_LINE           8  /**< 'line': the line through the first and last sample */
#define TRIBUTARY_DECIMATE_IIR       0  /**< decimate ftype 'iir': cheby1(n, 0.05, 0.8/q), n = 8 by default */
#define TRIBUTARY_DECIMATE_FIR       1  /**< decimate ftype 'fir': firwin(n + 1, 1/q, 'hamming'), n = 20·q by default */

/** The length of upfirdn's output along the axis: ceil(((length - 1)·up + h_count) / down). */
int tributary_upfirdn_length(size_t h_count, size_t length, size_t up, size_t down, size_t *out_length);

/** The length of resample_poly's output along the axis: ceil(length·up / down), up/down reduced. */
int tributary_resample_length(size_t length, size_t up, size_t down, size_t *out_length);

/** scipy.signal.upfirdn: upsample by up (zeros between samples), filter by the h_count taps of h, keep
 *  every down-th sample; the signal extended by mode TRIBUTARY_EXT_* (cval for CONSTANT; modes other
 *  than CONSTANT need length >= 1, SMOOTH, REFLECT and ANTIREFLECT length >= 2). */
int tributary_upfirdn(const double *h, size_t h_count, const double *x, double *y, size_t outer, size_t length,
                      size_t inner, size_t up, size_t down, int mode, double cval, size_t out_length);

/** scipy.signal.resample_poly: the rate times up/down. With taps (non-NULL, taps_count > 0) that FIR
 *  filter is applied; else a firwin low-pass of 20·max(up, down) + 1 taps with window "kaiser" (shape
 *  beta; scipy's default is beta 5), "hamming", "hann", "blackman" or "boxcar". mode/cval extend the
 *  signal (scipy's padtype of the upfirdn modes). */
int tributary_resample_poly(const double *x, double *y, size_t outer, size_t length, size_t inner, size_t up,
                            size_t down, const char *window, double beta, const double *taps, size_t taps_count,
                            int mode, double cval, size_t out_length);

/** scipy.signal.decimate: the anti-aliasing filter ftype TRIBUTARY_DECIMATE_* of order n (-1: the
 *  default), forward and backward when zero_phase is 1 (scipy's default), forward only when 0; then
 *  every q-th sample from the first: out_length = ceil(length / q). */
int tributary_decimate(const double *x, double *y, size_t outer, size_t length, size_t inner, size_t q, int64_t n,
                       int ftype, int zero_phase, size_t out_length);

/* ---- Live subscription (SCCT_Subject) ------------------------------------------------------- */

typedef struct tributary_subscription tributary_subscription;

/** The publishers on the local network that answer a discovery query within timeout_seconds (in
 *  [0.05, 3600]; 1 finds those on a quiet network), as `tributary resolve --json` prints them
 *  (caller frees *json with tributary_free): a JSON array of {"name", "host", "address", "auth" ("key"
 *  or "curve"), "answered_from", "truncated", "sources": [{"id", "device", "type", "rate", "channels",
 *  "channel_names", "unit" (null when the channels' units differ), "units", "sample_type"}]}.
 *  query: NULL or "" for every publisher, else as `tributary resolve QUERY` (e.g. "name=daq",
 *  "source=EEG"); a malformed query is E_ARGUMENT. The query goes to the default group
 *  239.255.84.82, port 16580 (docs/PROTOCOL.md §9). E_IO: no interface can send it. */
int tributary_resolve(const char *query, double timeout_seconds, char **json);

/** Opens a session with a publisher, sends the filters and the source selection and starts the data
 *  (as `tributary subscribe` does). address: "tcp://HOST:PORT" or "HOST:PORT", or "resolve:QUERY":
 *  the one publisher discovery finds in 1 s (E_IO, naming the matches, when none or several do). options: NULL, "" or a
 *  JSON object: "timeout" (seconds of silence before the session counts as lost, > 1, default 10),
 *  "description" (this client's name), "channels" (an analog filter: "0-3", "0,2" or an array; data
 *  for it carries filter id 1), "sources" (source selection: array of ids), "array_filters"
 *  (["double:5-15;5-15", ...]), "curve_server_key" (path of the publisher's .pub file: encrypt),
 *  "curve_key" (path of this subscriber's secret key; default a fresh pair), "capacity" (packages
 *  held for next() before the subscriber stops reading its socket; default 256).
 *  E_SCCT: the publisher refused or could not be reached; tributary_last_scct_error() gives the SCCT
 *  code (1 wrong API key, 2 wrong timeout, 7 destination unreachable, 8 empty address, 9 wrong port…).
 *  Close it with tributary_subscription_close(). */
int tributary_subscription_open(const char *address, const char *api_key, const char *options,
                                tributary_subscription **subscription);

/** The SCCT error code of the last call on this thread that failed with TRIBUTARY_E_SCCT (0 if none). */
int tributary_last_scct_error(void);

/** The session: {"session_id", "description", "sources": [{"id", "description"}], "filter_ids": [...],
 *  "clock": {"offset_s", "rtt_s", "measured_at_ns", "estimates"} or null} (caller frees *json with
 *  tributary_free). "clock" is the latest estimate of the publisher's clock (docs/PROTOCOL.md §4.9):
 *  its clock minus this one, the probe's round trip, when (this host's ns since 1970), how many so far;
 *  null until the first burst of probes is answered (some 0.2 s after opening) and with a publisher
 *  that does not answer probes. Each call reads the current one. */
int tributary_subscription_info_json(tributary_subscription *subscription, char **json);

/** Waits up to timeout_seconds (negative or infinite: forever; NaN is E_ARGUMENT) for the next
 *  package, in publisher order.
 *  *kind: TRIBUTARY_KIND_*; *json (owned by the subscription, valid until the next call of next or
 *  close): the package as `tributary subscribe --json` prints it ({"kind", "source_id", "sequence",
 *  "timestamp_ns", "filter_id", "flags", "content"}), except that analog content has its shape only
 *  ("format", "channel_count", "sample_count", "first_sample", "channel_indexes", int16 "scale" and
 *  "offset"): read the samples with tributary_subscription_analog(_copy). Gaps (frames the publisher
 *  dropped for this subscriber) arrive as TRIBUTARY_KIND_GAP packages; SCCT errors (lost connection,
 *  expired timeout, …) as TRIBUTARY_KIND_ERROR packages with {"code", "name", "message"}; the
 *  publisher's normal end of the session (it stopped, its replay ended) as a TRIBUTARY_KIND_CLOSE
 *  package with {"code": 0, "reason"}. A source's free-form properties (PROTOCOL.md §5.19) arrive after
 *  its configuration as a TRIBUTARY_KIND_PROPERTIES package.
 *  Either out-pointer may be NULL. E_TIMEOUT: nothing arrived in time (call again); E_END: the
 *  subscription was closed. A session that ended (an error or close package said why) then only times out. */
int tributary_subscription_next(tributary_subscription *subscription, double timeout_seconds, int *kind,
                                const char **json);

/** The analog block next() handed out last, in place (zero-copy): *samples points to channels ×
 *  samples_per_channel values of *sample_type, row-major, valid until the next call of next() or
 *  close(). E_TYPE when the current package is not analog. Any out-pointer may be NULL. */
int tributary_subscription_analog(tributary_subscription *subscription, const void **samples, int *sample_type,
                                  uint32_t *channels, uint64_t *samples_per_channel);

/** Copies the current analog block into a caller's buffer (row-major channels × samples):
 *  TRIBUTARY_FLOAT64 gives physical values (int16 / int32 counts scaled), the stored type gives it as is. */
int tributary_subscription_analog_copy(tributary_subscription *subscription, int sample_type, void *buffer,
                                       size_t buffer_bytes);

/** Ends the session (a normal close to the publisher) and frees the handle; a next() waiting on
 *  another thread returns TRIBUTARY_E_END. Using the handle afterwards gives E_HANDLE. */
int tributary_subscription_close(tributary_subscription *subscription);

/* ---- Publishing (SCCT_Publisher) ------------------------------------------------------------ */

typedef struct tributary_publisher tributary_publisher;
typedef struct tributary_source tributary_source;

/** Block layouts for tributary_source_push. */
#define TRIBUTARY_CHANNEL_MAJOR 0  /**< channel 0's samples, then channel 1's, … ([channels][samples], C order) */
#define TRIBUTARY_INTERLEAVED   1  /**< sample 0 of every channel, then sample 1, … ([samples][channels]) */

/** tributary_source_push's first_sample_time_ns when the caller gives no time. */
#define TRIBUTARY_TIME_AUTO INT64_MIN

/** Binds a publisher (the same publisher as `tributary serve`: sessions, filters, credit, error codes)
 *  and starts its thread. bind: a libzmq endpoint, e.g. "tcp://0.0.0.0:5555" or "tcp://127.0.0.1:0"
 *  (a free port); api_key: the key subscribers must present (not empty); description: sent in the
 *  welcome (NULL: "libtributary publisher"). *endpoint (may be NULL; caller frees it with
 *  tributary_free) receives the endpoint bound, with the real port. E_IO: the endpoint cannot be
 *  bound. Close it with tributary_publisher_close(). */
int tributary_publisher_open(const char *bind, const char *api_key, const char *description,
                             tributary_publisher **publisher, char **endpoint);

/** Discovery (docs/PROTOCOL.md §9). An open publisher answers discovery queries as `tributary serve`
 *  does: on the group 239.255.84.82, port 16580, TTL 1, with its description as name and its
 *  sources; bound to a loopback address it answers queries from this host only; where multicast is
 *  not available it publishes without answering. enabled 0 stops answering (`serve --no-announce`);
 *  enabled 1 answers on group (NULL: the default), port (0: the default; else 1-65535) and ttl (-1:
 *  the default; else 0-255). E_ARGUMENT: a bad value; E_IO: the group cannot be joined or the port
 *  bound (the publisher then answers nowhere). */
int tributary_publisher_discovery(tributary_publisher *publisher, int enabled, const char *group, int port, int ttl);

/** Adds an analog source fed by tributary_source_push. id: > 0, unique in the publisher;
 *  device_name: its description; sample_rate: Hz per channel (1e-6 to 1e12); channel_names: a
 *  comma-separated list of channel_count names (NULL: "ch0,ch1,…"); unit: of every channel;
 *  sample_type: TRIBUTARY_FLOAT64, TRIBUTARY_FLOAT32, TRIBUTARY_INT16 or TRIBUTARY_INT32 (counts:
 *  value = count * scale + offset; for the float types scale must be 1 and offset 0); range_min < range_max: the
 *  channels' range in physical units; lossless: 0 live (a full queue drops blocks, push never waits),
 *  1 lossless (push waits for the slowest subscriber, up to its timeout). Sessions already open
 *  receive its configuration at once. Close it with tributary_source_close() (or with its publisher). */
int tributary_source_add(tributary_publisher *publisher, uint32_t id, const char *device_name, double sample_rate,
                         uint32_t channel_count, const char *channel_names, const char *unit, int sample_type,
                         double scale, double offset, double range_min, double range_max, int lossless,
                         tributary_source **source);

/** Sets free-form properties (a sensor's serial number, a calibration date, a subject id) for the
 *  source with id source_id that the next tributary_source_add() of that id creates: sent to
 *  subscribers right after its configuration (docs/PROTOCOL.md §5.19), kept by recordings. properties:
 *  one per line (\n or \r\n), "KEY=VALUE" for the source, "CH:KEY=VALUE" for the channel whose index
 *  (0-based position) is CH; the value is everything after the first '='; a key given again: the last
 *  value; empty lines are skipped. Call it again to replace them, with "" for none. The next
 *  tributary_source_add() of that id uses them up, whether it succeeds or fails. Bounds: keys 1-256
 *  bytes, values up to 16384 bytes, 1024 properties per source or channel, 1 MiB encoded in all.
 *  Returns TRIBUTARY_OK; E_ARGUMENT (NULL text, source_id 0, a line without '=', an empty key, a bound
 *  exceeded, or — at tributary_source_add — a channel the source does not have); E_HANDLE. */
int tributary_publisher_set_properties(tributary_publisher *publisher, uint32_t source_id, const char *properties);

/** Publishes one analog block: channels × samples_per_channel samples of sample_type (the source's
 *  type; its channel count) at samples, laid out TRIBUTARY_CHANNEL_MAJOR or TRIBUTARY_INTERLEAVED.
 *  The samples are copied once, into the frame, before the call returns. first_sample_time_ns: the
 *  first sample's time (ns since 1970) or TRIBUTARY_TIME_AUTO: contiguous with the previous block
 *  (the wall clock at the first push, then the last given time, plus samples since / rate).
 *  timeout_seconds (0 to 86400): how long a lossless source waits for room; a live source never waits.
 *  Returns TRIBUTARY_OK; TRIBUTARY_E_DROPPED (live: the queue was full, the block is lost and counted,
 *  the stream goes on after it); TRIBUTARY_E_TIMEOUT (lossless: no room in time, nothing sent, push it
 *  again); E_TYPE (another sample type), E_RANGE (another channel count), E_ARGUMENT (NULL samples,
 *  0 samples, a block larger than a frame, a bad layout or timeout), E_HANDLE (closed source or
 *  publisher). Safe from the acquisition thread; one push at a time per source. */
int tributary_source_push(tributary_source *source, const void *samples, int sample_type, uint32_t channels,
                          uint64_t samples_per_channel, int layout, int64_t first_sample_time_ns,
                          double timeout_seconds);

/** Blocks the source handed to the publisher, and live blocks it dropped (either pointer may be NULL). */
int tributary_source_counts(tributary_source *source, uint64_t *pushed, uint64_t *dropped);

/** Ends the source (frames already pushed still go out) and frees the handle. */
int tributary_source_close(tributary_source *source);

/** Sends a message package of the publisher itself (source 0) to every started subscriber.
 *  E_DROPPED: the publisher's queue was full. */
int tributary_publisher_send_message(tributary_publisher *publisher, const char *text);

/** *count: the subscribers receiving data now (between their start and stop). */
int tributary_publisher_subscribers(tributary_publisher *publisher, int *count);

/** Closes the publisher's sources, lets what lossless sources pushed reach their subscribers (up to
 *  10 s), stops the publisher (subscribers get the normal close) and frees the handle. Its source
 *  handles must still be closed; pushes to them give E_HANDLE. */
int tributary_publisher_close(tributary_publisher *publisher);

/* ---- Spectral functions (docs/C_API.md, "Spectral functions") ----
 * scipy.signal's windows, short-time transform and its inverse, and Welch auto- and cross-spectra.
 * Arrays are row-major float64; complex values are interleaved (re, im). nperseg is the window's
 * length (1 ... 2^22), noverlap 0 ... nperseg - 1, nfft nperseg ... 2^22; detrend 0 none, 1 constant,
 * 2 linear. A bad argument is E_ARGUMENT with a message naming it. */

/** out (count values) = scipy.signal.get_window((name, *parameters), count, fftbins=!symmetric):
 *  boxcar, hann, hamming, blackman, blackmanharris, flattop, bartlett, tukey (one optional parameter,
 *  alpha) and their scipy aliases; a _periodic / _symmetric suffix overrides symmetric (0 or 1). */
int tributary_spectral_window(const char *name, const double *parameters, size_t parameter_count, size_t count,
                              int symmetric, double *out);

/** The short-time spectra of rows signals of samples values each (samples >= nperseg): out receives
 *  rows x bins x segments complex values (bins nfft/2+1, or nfft when twosided is 1; segments
 *  (samples - nperseg) / (nperseg - noverlap) + 1), each segment detrended, windowed, transformed and
 *  multiplied by scale. out_count is out's length in doubles; *segments (may be NULL) the segments. */
int tributary_stft(const double *x, size_t rows, size_t samples, const double *window, size_t nperseg, size_t noverlap,
                   size_t nfft, int detrend, int twosided, double scale, double *out, size_t out_count, size_t *segments);

/** scipy.signal.spectrogram(mode='psd') of rows signals of samples values each (samples >= nperseg):
 *  out receives rows x bins x segments powers (scipy's layout), each segment detrended, windowed and
 *  transformed, |X|^2 times scale, doubled in the one-sided bins other than DC and (even nfft)
 *  Nyquist; rows run on the processor's cores. Arguments as tributary_stft's. */
int tributary_spectrogram(const double *x, size_t rows, size_t samples, const double *window, size_t nperseg,
                          size_t noverlap, size_t nfft, int detrend, int twosided, double scale, double *out,
                          size_t out_count, size_t *segments);

/** Welch spectra of rows pairs (x[row], y[row], samples values each): pxx and pyy receive rows x bins
 *  values (scipy.signal.welch), pxy rows x bins complex values (scipy.signal.csd(x, y): conj(X) Y).
 *  Any output may be NULL (y NULL: pxx only). average 0 mean, 1 median; scaling 0 density, 1 spectrum;
 *  fs > 0; bins must be nfft/2+1 (or nfft when twosided). */
int tributary_cross_spectra(const double *x, const double *y, size_t rows, size_t samples, const double *window,
                            size_t nperseg, size_t noverlap, size_t nfft, int detrend, int average, int scaling,
                            int twosided, double fs, double *pxx, double *pyy, double *pxy, size_t bins);

/** scipy.signal.istft of rows one-sided spectra z (each bins x segments complex values, bins = nfft/2+1):
 *  each segment's inverse real FFT (cut to nperseg) times gain and the window, overlap-added and divided
 *  by the overlap-added squared window where it exceeds 1e-10; out receives rows x (end - start) samples
 *  of the nperseg + (segments - 1) * (nperseg - noverlap) long result. *nola_failures (may be NULL): the
 *  returned samples of row 0 whose squared-window sum was at most 1e-10. */
int tributary_istft(const double *z, size_t rows, size_t bins, size_t segments, const double *window, size_t nperseg,
                    size_t noverlap, size_t nfft, double gain, size_t start, size_t end, double *out,
                    size_t *nola_failures);

#ifdef __cplusplus
}
#endif

#endif /* TRIBUTARY_H */
