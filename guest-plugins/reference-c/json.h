/* json.h: a small JSON tree for the C reference enricher. Parses UTF-8 JSON
 * text into a tree and prints it back compactly. Numbers keep their source
 * text, so a value passed through is unchanged. Object keys keep their
 * order. Enough for plugin configs and arguments; not a general library. */
#ifndef REFERENCE_C_JSON_H
#define REFERENCE_C_JSON_H

#include <stddef.h>

typedef enum { J_NULL, J_FALSE, J_TRUE, J_NUMBER, J_STRING, J_ARRAY, J_OBJECT } jtype;

typedef struct jvalue {
    jtype type;
    char *text;             /* J_NUMBER: source text; J_STRING: decoded UTF-8 */
    size_t len;             /* J_ARRAY/J_OBJECT: number of items */
    char **keys;            /* J_OBJECT: keys, NUL-terminated */
    struct jvalue **items;  /* J_ARRAY/J_OBJECT: values */
} jvalue;

/* Parse `len` bytes; NULL if they are not one JSON value. */
jvalue *json_parse(const char *text, size_t len);
void json_free(jvalue *v);

/* The value under `key` of an object, or NULL. */
jvalue *json_get(const jvalue *obj, const char *key);
/* A string value's text, or NULL if `v` is not a string. */
const char *json_str(const jvalue *v);

jvalue *json_new(jtype type);
jvalue *json_new_string(const char *s);
/* Set `key` of an object (replacing in place if present; takes `value`). */
void json_set(jvalue *obj, const char *key, jvalue *value);
/* Append to an array (takes `value`). */
void json_push(jvalue *arr, jvalue *value);

/* Compact JSON text (malloc'd, NUL-terminated); its length in *out_len. */
char *json_print(const jvalue *v, size_t *out_len);

#endif
