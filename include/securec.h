/* gradkit: the bounds-checked memory and string functions of Huawei's secure C library (libboundscheck), which CANN's
 * example programs include as "securec.h". Header-only (static inline), so that a program that includes it links
 * with nothing but gradkit. Each returns EOK (0) on success; on a null pointer, a destination too small or (for the
 * copies) overlapping memory it returns a nonzero code and, where the destination is usable, clears it, as the
 * library does. */
#ifndef GRADKIT_SECUREC_H_
#define GRADKIT_SECUREC_H_

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifndef EOK
#define EOK 0
#endif
#ifndef SECUREC_EINVAL
#define SECUREC_EINVAL 22   /* a null pointer or a zero / oversized destination size */
#define SECUREC_ERANGE 34   /* the source does not fit into the destination */
#define SECUREC_EOVERLAP 54 /* source and destination overlap */
#endif
/* The largest destination size the library accepts (SECUREC_MEM_MAX_LEN). */
#define SECUREC_MEM_MAX_LEN 0x7fffffffUL

#ifndef GRADKIT_ERRNO_T_DEFINED
#define GRADKIT_ERRNO_T_DEFINED
typedef int errno_t;
#endif

static inline int securec_overlaps(const void* a, size_t aBytes, const void* b, size_t bBytes) {
  const uintptr_t x = (uintptr_t)a, y = (uintptr_t)b;
  return x < y + bBytes && y < x + aBytes;
}

/** Copies count bytes of src to dest (destMax bytes); ERANGE and dest cleared when count > destMax. */
static inline errno_t memcpy_s(void* dest, size_t destMax, const void* src, size_t count) {
  if (dest == NULL || destMax == 0 || destMax > SECUREC_MEM_MAX_LEN) return SECUREC_EINVAL;
  if (src == NULL) {
    memset(dest, 0, destMax);
    return SECUREC_EINVAL;
  }
  if (count > destMax) {
    memset(dest, 0, destMax);
    return SECUREC_ERANGE;
  }
  if (securec_overlaps(dest, count, src, count)) {
    memset(dest, 0, destMax);
    return SECUREC_EOVERLAP;
  }
  memmove(dest, src, count); /* not overlapping (checked above); memmove keeps compilers' overlap analysis quiet */
  return EOK;
}

/** Copies count bytes of src to dest (destMax bytes); overlapping memory allowed. */
static inline errno_t memmove_s(void* dest, size_t destMax, const void* src, size_t count) {
  if (dest == NULL || destMax == 0 || destMax > SECUREC_MEM_MAX_LEN) return SECUREC_EINVAL;
  if (src == NULL) {
    memset(dest, 0, destMax);
    return SECUREC_EINVAL;
  }
  if (count > destMax) {
    memset(dest, 0, destMax);
    return SECUREC_ERANGE;
  }
  memmove(dest, src, count);
  return EOK;
}

/** Sets count bytes of dest (destMax bytes) to c; ERANGE (destMax bytes set) when count > destMax. */
static inline errno_t memset_s(void* dest, size_t destMax, int c, size_t count) {
  if (dest == NULL || destMax > SECUREC_MEM_MAX_LEN) return SECUREC_EINVAL;
  if (count > destMax) {
    memset(dest, c, destMax);
    return SECUREC_ERANGE;
  }
  memset(dest, c, count);
  return EOK;
}

/** Copies the string src with its terminator into dest (destMax chars); ERANGE and dest emptied when too long. */
static inline errno_t strcpy_s(char* dest, size_t destMax, const char* src) {
  if (dest == NULL || destMax == 0 || destMax > SECUREC_MEM_MAX_LEN) return SECUREC_EINVAL;
  if (src == NULL) {
    dest[0] = '\0';
    return SECUREC_EINVAL;
  }
  const size_t length = strnlen(src, destMax);
  if (length >= destMax) {
    dest[0] = '\0';
    return SECUREC_ERANGE;
  }
  if (securec_overlaps(dest, length + 1, src, length + 1)) {
    dest[0] = '\0';
    return SECUREC_EOVERLAP;
  }
  memmove(dest, src, length + 1);
  return EOK;
}

/** Copies at most count chars of src into dest (destMax chars), always terminated. */
static inline errno_t strncpy_s(char* dest, size_t destMax, const char* src, size_t count) {
  if (dest == NULL || destMax == 0 || destMax > SECUREC_MEM_MAX_LEN) return SECUREC_EINVAL;
  if (src == NULL) {
    dest[0] = '\0';
    return SECUREC_EINVAL;
  }
  const size_t length = strnlen(src, count);
  if (length >= destMax) {
    dest[0] = '\0';
    return SECUREC_ERANGE;
  }
  memmove(dest, src, length);
  dest[length] = '\0';
  return EOK;
}

/** Appends the string src to the string in dest (destMax chars); ERANGE and dest emptied when it does not fit. */
static inline errno_t strcat_s(char* dest, size_t destMax, const char* src) {
  if (dest == NULL || destMax == 0 || destMax > SECUREC_MEM_MAX_LEN) return SECUREC_EINVAL;
  const size_t used = strnlen(dest, destMax);
  if (src == NULL || used == destMax) {
    dest[0] = '\0';
    return src == NULL ? SECUREC_EINVAL : SECUREC_ERANGE;
  }
  return strcpy_s(dest + used, destMax - used, src) == EOK ? EOK : (dest[0] = '\0', SECUREC_ERANGE);
}

#endif /* GRADKIT_SECUREC_H_ */
