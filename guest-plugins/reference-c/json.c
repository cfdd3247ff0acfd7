/* json.c: see json.h. */
#include "json.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *p, *end;
} cursor;

static void skip_ws(cursor *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) c->p++;
}

jvalue *json_new(jtype type) {
    jvalue *v = calloc(1, sizeof *v);
    if (v) v->type = type;
    return v;
}

static char *dup_n(const char *s, size_t n) {
    char *out = malloc(n + 1);
    if (!out) return NULL;
    memcpy(out, s, n);
    out[n] = 0;
    return out;
}

jvalue *json_new_string(const char *s) {
    jvalue *v = json_new(J_STRING);
    if (v) v->text = dup_n(s, strlen(s));
    return v;
}

static void add_item(jvalue *v, char *key, jvalue *item) {
    v->items = realloc(v->items, (v->len + 1) * sizeof *v->items);
    if (v->type == J_OBJECT) {
        v->keys = realloc(v->keys, (v->len + 1) * sizeof *v->keys);
        v->keys[v->len] = key;
    }
    v->items[v->len++] = item;
}

static size_t put_utf8(char *out, unsigned cp) {
    if (cp < 0x80) { out[0] = (char)cp; return 1; }
    if (cp < 0x800) { out[0] = (char)(0xC0 | (cp >> 6)); out[1] = (char)(0x80 | (cp & 0x3F)); return 2; }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12)); out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F)); return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18)); out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); out[3] = (char)(0x80 | (cp & 0x3F)); return 4;
}

static int hex4(const char *p, unsigned *out) {
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char ch = p[i];
        v <<= 4;
        if (ch >= '0' && ch <= '9') v |= (unsigned)(ch - '0');
        else if (ch >= 'a' && ch <= 'f') v |= (unsigned)(ch - 'a' + 10);
        else if (ch >= 'A' && ch <= 'F') v |= (unsigned)(ch - 'A' + 10);
        else return 0;
    }
    *out = v;
    return 1;
}

/* A string literal at c->p (after the quote); the decoded text, or NULL. */
static char *parse_string(cursor *c) {
    char *out = malloc((size_t)(c->end - c->p) + 1);
    size_t n = 0;
    if (!out) return NULL;
    while (c->p < c->end && *c->p != '"') {
        char ch = *c->p++;
        if ((unsigned char)ch < 0x20) break;
        if (ch != '\\') { out[n++] = ch; continue; }
        if (c->p >= c->end) break;
        ch = *c->p++;
        switch (ch) {
        case '"': case '\\': case '/': out[n++] = ch; break;
        case 'b': out[n++] = '\b'; break;
        case 'f': out[n++] = '\f'; break;
        case 'n': out[n++] = '\n'; break;
        case 'r': out[n++] = '\r'; break;
        case 't': out[n++] = '\t'; break;
        case 'u': {
            unsigned cp, lo;
            if (c->end - c->p < 4 || !hex4(c->p, &cp)) goto fail;
            c->p += 4;
            if (cp >= 0xD800 && cp < 0xDC00 && c->end - c->p >= 6 && c->p[0] == '\\' && c->p[1] == 'u' &&
                hex4(c->p + 2, &lo) && lo >= 0xDC00 && lo < 0xE000) {
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                c->p += 6;
            }
            n += put_utf8(out + n, cp);
            break;
        }
        default: goto fail;
        }
    }
    if (c->p >= c->end) goto fail;
    c->p++; /* closing quote */
    out[n] = 0;
    return out;
fail:
    free(out);
    return NULL;
}

static jvalue *parse_value(cursor *c, int depth);

static jvalue *parse_container(cursor *c, int depth, jtype type) {
    char close = type == J_OBJECT ? '}' : ']';
    jvalue *v = json_new(type);
    skip_ws(c);
    if (c->p < c->end && *c->p == close) { c->p++; return v; }
    for (;;) {
        char *key = NULL;
        skip_ws(c);
        if (type == J_OBJECT) {
            if (c->p >= c->end || *c->p != '"') goto fail;
            c->p++;
            if (!(key = parse_string(c))) goto fail;
            skip_ws(c);
            if (c->p >= c->end || *c->p != ':') { free(key); goto fail; }
            c->p++;
        }
        jvalue *item = parse_value(c, depth + 1);
        if (!item) { free(key); goto fail; }
        add_item(v, key, item);
        skip_ws(c);
        if (c->p < c->end && *c->p == ',') { c->p++; continue; }
        if (c->p < c->end && *c->p == close) { c->p++; return v; }
        goto fail;
    }
fail:
    json_free(v);
    return NULL;
}

static int literal(cursor *c, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0) return 0;
    c->p += n;
    return 1;
}

static jvalue *parse_value(cursor *c, int depth) {
    if (depth > 128) return NULL;
    skip_ws(c);
    if (c->p >= c->end) return NULL;
    char ch = *c->p;
    if (ch == '{') { c->p++; return parse_container(c, depth, J_OBJECT); }
    if (ch == '[') { c->p++; return parse_container(c, depth, J_ARRAY); }
    if (ch == '"') {
        c->p++;
        char *s = parse_string(c);
        if (!s) return NULL;
        jvalue *v = json_new(J_STRING);
        v->text = s;
        return v;
    }
    if (literal(c, "null")) return json_new(J_NULL);
    if (literal(c, "true")) return json_new(J_TRUE);
    if (literal(c, "false")) return json_new(J_FALSE);
    const char *start = c->p;
    while (c->p < c->end && strchr("+-0123456789.eE", *c->p)) c->p++;
    if (c->p == start) return NULL;
    jvalue *v = json_new(J_NUMBER);
    v->text = dup_n(start, (size_t)(c->p - start));
    return v;
}

jvalue *json_parse(const char *text, size_t len) {
    cursor c = {text, text + len};
    jvalue *v = parse_value(&c, 0);
    skip_ws(&c);
    if (v && c.p != c.end) { json_free(v); return NULL; }
    return v;
}

void json_free(jvalue *v) {
    if (!v) return;
    for (size_t i = 0; i < v->len; i++) {
        if (v->keys) free(v->keys[i]);
        json_free(v->items[i]);
    }
    free(v->keys);
    free(v->items);
    free(v->text);
    free(v);
}

jvalue *json_get(const jvalue *obj, const char *key) {
    if (!obj || obj->type != J_OBJECT) return NULL;
    for (size_t i = 0; i < obj->len; i++)
        if (strcmp(obj->keys[i], key) == 0) return obj->items[i];
    return NULL;
}

const char *json_str(const jvalue *v) { return v && v->type == J_STRING ? v->text : NULL; }

void json_set(jvalue *obj, const char *key, jvalue *value) {
    for (size_t i = 0; i < obj->len; i++) {
        if (strcmp(obj->keys[i], key) == 0) {
            json_free(obj->items[i]);
            obj->items[i] = value;
            return;
        }
    }
    add_item(obj, dup_n(key, strlen(key)), value);
}

void json_push(jvalue *arr, jvalue *value) { add_item(arr, NULL, value); }

typedef struct {
    char *buf;
    size_t len, cap;
} sbuf;

static void put(sbuf *b, const char *s, size_t n) {
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->buf = realloc(b->buf, b->cap);
    }
    memcpy(b->buf + b->len, s, n);
    b->len += n;
    b->buf[b->len] = 0;
}

static void put_string(sbuf *b, const char *s) {
    put(b, "\"", 1);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') { put(b, "\\", 1); put(b, s, 1); }
        else if (ch < 0x20) {
            char esc[7];
            const char *hex = "0123456789abcdef";
            esc[0] = '\\'; esc[1] = 'u'; esc[2] = '0'; esc[3] = '0';
            esc[4] = hex[ch >> 4]; esc[5] = hex[ch & 15]; esc[6] = 0;
            put(b, esc, 6);
        } else put(b, s, 1);
    }
    put(b, "\"", 1);
}

static void print_value(sbuf *b, const jvalue *v) {
    switch (v->type) {
    case J_NULL: put(b, "null", 4); break;
    case J_TRUE: put(b, "true", 4); break;
    case J_FALSE: put(b, "false", 5); break;
    case J_NUMBER: put(b, v->text, strlen(v->text)); break;
    case J_STRING: put_string(b, v->text); break;
    case J_ARRAY:
    case J_OBJECT:
        put(b, v->type == J_OBJECT ? "{" : "[", 1);
        for (size_t i = 0; i < v->len; i++) {
            if (i) put(b, ",", 1);
            if (v->type == J_OBJECT) { put_string(b, v->keys[i]); put(b, ":", 1); }
            print_value(b, v->items[i]);
        }
        put(b, v->type == J_OBJECT ? "}" : "]", 1);
        break;
    }
}

char *json_print(const jvalue *v, size_t *out_len) {
    sbuf b = {NULL, 0, 0};
    put(&b, "", 0);
    print_value(&b, v);
    if (out_len) *out_len = b.len;
    return b.buf;
}
