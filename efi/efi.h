/* The few UEFI interfaces the EFI entry uses (UEFI Specification 2.10:
   4.3 System Table, 4.4 Boot Services, 4.5 Runtime Services, 7.2 memory
   allocation, 8.2 variables, 9.1 Loaded Image, 12.4 Simple Text Output,
   12.9 Graphics Output). Only the members used are named; the others keep
   their places as opaque pointers, so every offset is the specification's. */
#ifndef CLOCKBENCH_EFI_H
#define CLOCKBENCH_EFI_H

#include <stddef.h>
#include <stdint.h>

#define EFIAPI __attribute__((ms_abi))

typedef uint64_t efi_status;
typedef void *efi_handle;
typedef uint16_t char16;

#define EFI_SUCCESS 0
#define EFI_ERROR_BIT (1ull << 63)
#define EFI_INVALID_PARAMETER (EFI_ERROR_BIT | 2)
#define EFI_UNSUPPORTED (EFI_ERROR_BIT | 3)
#define EFI_BUFFER_TOO_SMALL (EFI_ERROR_BIT | 5)
#define EFI_LOAD_ERROR (EFI_ERROR_BIT | 1)
#define EFI_OUT_OF_RESOURCES (EFI_ERROR_BIT | 9)
#define EFI_NOT_FOUND (EFI_ERROR_BIT | 14)

struct efi_guid {
    uint32_t d1;
    uint16_t d2, d3;
    uint8_t d4[8];
};

struct efi_table_header {
    uint64_t signature;
    uint32_t revision, header_size, crc32, reserved;
};

/* 7.2: EFI_ALLOCATE_TYPE and EFI_MEMORY_TYPE */
#define EFI_ALLOCATE_MAX_ADDRESS 1
#define EFI_ALLOCATE_ADDRESS 2
enum efi_memory_type {
    EFI_RESERVED_MEMORY,
    EFI_LOADER_CODE,
    EFI_LOADER_DATA,
    EFI_BOOT_SERVICES_CODE,
    EFI_BOOT_SERVICES_DATA,
    EFI_RUNTIME_SERVICES_CODE,
    EFI_RUNTIME_SERVICES_DATA,
    EFI_CONVENTIONAL_MEMORY,
    EFI_UNUSABLE_MEMORY,
    EFI_ACPI_RECLAIM_MEMORY,
    EFI_ACPI_MEMORY_NVS,
    EFI_MEMORY_MAPPED_IO,
    EFI_MEMORY_MAPPED_IO_PORT_SPACE,
    EFI_PAL_CODE,
    EFI_PERSISTENT_MEMORY,
};
#define EFI_PAGE_SIZE 4096

struct efi_memory_descriptor {
    uint32_t type;
    uint32_t pad;
    uint64_t physical_start;
    uint64_t virtual_start;
    uint64_t pages;
    uint64_t attribute;
};

struct efi_simple_text_output {
    void *reset;
    efi_status(EFIAPI *output_string)(struct efi_simple_text_output *self, const char16 *s);
};

struct efi_boot_services {
    struct efi_table_header hdr;
    void *raise_tpl, *restore_tpl;
    efi_status(EFIAPI *allocate_pages)(int type, int memory_type, uint64_t pages, uint64_t *addr);
    efi_status(EFIAPI *free_pages)(uint64_t addr, uint64_t pages);
    efi_status(EFIAPI *get_memory_map)(uint64_t *size, struct efi_memory_descriptor *map, uint64_t *key,
                                       uint64_t *desc_size, uint32_t *desc_version);
    efi_status(EFIAPI *allocate_pool)(int memory_type, uint64_t size, void **buffer);
    efi_status(EFIAPI *free_pool)(void *buffer);
    void *create_event, *set_timer, *wait_for_event, *signal_event, *close_event, *check_event;
    void *install_protocol_interface, *reinstall_protocol_interface, *uninstall_protocol_interface;
    efi_status(EFIAPI *handle_protocol)(efi_handle handle, const struct efi_guid *protocol, void **interface);
    void *reserved, *register_protocol_notify, *locate_handle, *locate_device_path, *install_configuration_table;
    void *load_image, *start_image, *exit, *unload_image;
    efi_status(EFIAPI *exit_boot_services)(efi_handle image, uint64_t map_key);
    void *get_next_monotonic_count;
    efi_status(EFIAPI *stall)(uint64_t microseconds);
    efi_status(EFIAPI *set_watchdog_timer)(uint64_t timeout_s, uint64_t code, uint64_t data_size, const char16 *data);
    void *connect_controller, *disconnect_controller;
    void *open_protocol, *close_protocol, *open_protocol_information;
    void *protocols_per_handle, *locate_handle_buffer;
    efi_status(EFIAPI *locate_protocol)(const struct efi_guid *protocol, void *registration, void **interface);
};

struct efi_runtime_services {
    struct efi_table_header hdr;
    void *get_time, *set_time, *get_wakeup_time, *set_wakeup_time, *set_virtual_address_map, *convert_pointer;
    efi_status(EFIAPI *get_variable)(const char16 *name, const struct efi_guid *vendor, uint32_t *attributes,
                                     uint64_t *data_size, void *data);
};

struct efi_configuration_table {
    struct efi_guid guid;
    void *table;
};

struct efi_system_table {
    struct efi_table_header hdr;
    const char16 *firmware_vendor;
    uint32_t firmware_revision;
    efi_handle console_in_handle;
    void *con_in;
    efi_handle console_out_handle;
    struct efi_simple_text_output *con_out;
    efi_handle standard_error_handle;
    struct efi_simple_text_output *std_err;
    struct efi_runtime_services *runtime_services;
    struct efi_boot_services *boot_services;
    uint64_t number_of_table_entries;
    struct efi_configuration_table *configuration_table;
};

struct efi_loaded_image {
    uint32_t revision;
    efi_handle parent_handle;
    struct efi_system_table *system_table;
    efi_handle device_handle;
    void *file_path;
    void *reserved;
    uint32_t load_options_size;
    void *load_options;
    void *image_base;
    uint64_t image_size;
    int image_code_type, image_data_type;
    void *unload;
};

/* 12.9: EFI_GRAPHICS_OUTPUT_PROTOCOL */
enum efi_pixel_format { EFI_PIXEL_RGBX_8, EFI_PIXEL_BGRX_8, EFI_PIXEL_BITMASK, EFI_PIXEL_BLT_ONLY };
struct efi_gop_mode_info {
    uint32_t version, width, height;
    uint32_t pixel_format;
    uint32_t red_mask, green_mask, blue_mask, reserved_mask;
    uint32_t pixels_per_scan_line;
};
struct efi_gop_mode {
    uint32_t max_mode, mode;
    struct efi_gop_mode_info *info;
    uint64_t size_of_info;
    uint64_t frame_buffer_base;
    uint64_t frame_buffer_size;
};
struct efi_gop {
    efi_status(EFIAPI *query_mode)(struct efi_gop *self, uint32_t mode, uint64_t *size, struct efi_gop_mode_info **info);
    efi_status(EFIAPI *set_mode)(struct efi_gop *self, uint32_t mode);
    void *blt;
    struct efi_gop_mode *mode;
};

_Static_assert(offsetof(struct efi_boot_services, exit_boot_services) == 24 + 26 * 8, "UEFI 2.10, 4.4.1");
_Static_assert(offsetof(struct efi_boot_services, locate_protocol) == 24 + 37 * 8, "UEFI 2.10, 4.4.1");
_Static_assert(offsetof(struct efi_runtime_services, get_variable) == 24 + 6 * 8, "UEFI 2.10, 4.5.1");
_Static_assert(offsetof(struct efi_system_table, boot_services) == 96, "UEFI 2.10, 4.3.1");
_Static_assert(offsetof(struct efi_loaded_image, load_options) == 56, "UEFI 2.10, 9.1.1");

#endif
