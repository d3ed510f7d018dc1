// Debian's libhdf5-dev (1.10) puts the serial library's headers in /usr/include/hdf5/serial and the
// library as libhdf5_serial. The predefined type and property-list ids are macros that read globals
// after H5open(); Swift cannot import them, so they are wrapped in functions here.
#include <hdf5/serial/hdf5.h>

static inline hid_t chdf5_native_double(void) { return H5T_NATIVE_DOUBLE; }
static inline hid_t chdf5_native_float(void) { return H5T_NATIVE_FLOAT; }
static inline hid_t chdf5_native_int16(void) { return H5T_NATIVE_SHORT; }
static inline hid_t chdf5_native_int32(void) { return H5T_NATIVE_INT; }
static inline hid_t chdf5_native_int64(void) { return H5T_NATIVE_LLONG; }
static inline hid_t chdf5_native_uint32(void) { return H5T_NATIVE_UINT; }
static inline hid_t chdf5_native_uint8(void) { return H5T_NATIVE_UCHAR; }
static inline hid_t chdf5_c_s1(void) { return H5T_C_S1; }
static inline hid_t chdf5_dataset_create(void) { return H5P_DATASET_CREATE; }
static inline hid_t chdf5_group_create(void) { return H5P_GROUP_CREATE; }
static inline unsigned chdf5_acc_trunc(void) { return H5F_ACC_TRUNC; }
static inline unsigned chdf5_acc_rdonly(void) { return H5F_ACC_RDONLY; }
static inline size_t chdf5_variable(void) { return H5T_VARIABLE; }
/// Group creation properties that keep the creation order of attributes (and index it).
static inline herr_t chdf5_track_attribute_order(hid_t plist) {
    return H5Pset_attr_creation_order(plist, H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED);
}
/// Turns off HDF5's printing of error stacks to stderr (errors are returned as negative values).
static inline void chdf5_silence(void) { H5Eset_auto2(H5E_DEFAULT, NULL, NULL); }
