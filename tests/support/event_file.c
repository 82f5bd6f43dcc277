/*
 * event_file — see event_file.h. Independent of the library on purpose.
 */
#include "event_file.h"
#include "test_env.h" /* cmocka */
#include "tmpdir.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t crc32c_ref(const unsigned char *p, size_t n) {
  uint32_t crc = 0xffffffffu;
  size_t i;
  int k;
  for (i = 0; i < n; i++) {
    crc ^= p[i];
    for (k = 0; k < 8; k++) crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1u)));
  }
  return crc ^ 0xffffffffu;
}

static uint32_t masked(const unsigned char *p, size_t n) {
  uint32_t c = crc32c_ref(p, n);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

static uint64_t get_le(const unsigned char *p, int nbytes) {
  uint64_t v = 0;
  int i;
  for (i = nbytes - 1; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

static double get_double(const unsigned char **p, const unsigned char *end) {
  uint64_t bits;
  double d;
  assert_true(end - *p >= 8);
  bits = get_le(*p, 8);
  memcpy(&d, &bits, sizeof d);
  *p += 8;
  return d;
}

static uint64_t get_varint(const unsigned char **p, const unsigned char *end) {
  uint64_t v = 0;
  int shift = 0;
  while (*p < end) {
    unsigned char b = *(*p)++;
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
    shift += 7;
    assert_true(shift < 70);
  }
  fail_msg("truncated varint");
  return 0;
}

/* A length-delimited payload: [*p, *p + n). */
static const unsigned char *get_bytes(const unsigned char **p, const unsigned char *end, size_t *n) {
  uint64_t len = get_varint(p, end);
  const unsigned char *d = *p;
  assert_true(len <= (uint64_t)(end - *p));
  *n = (size_t)len;
  *p += len;
  return d;
}

static void copy_str(char *dst, size_t cap, const unsigned char *src, size_t n) {
  assert_true(n < cap);
  memcpy(dst, src, n);
  dst[n] = '\0';
}

static void packed_doubles(const unsigned char *d, size_t n, double **out, size_t *count) {
  size_t i;
  assert_true(n % 8 == 0);
  *count = n / 8;
  *out = calloc(*count ? *count : 1, sizeof(double));
  assert_non_null(*out);
  for (i = 0; i < *count; i++) {
    uint64_t bits = get_le(d + 8 * i, 8);
    memcpy(&(*out)[i], &bits, sizeof(double));
  }
}

static void decode_histo(const unsigned char *p, const unsigned char *end, ev_value *v) {
  size_t nl = 0, nc = 0;
  while (p < end) {
    uint64_t key = get_varint(&p, end);
    const unsigned char *d;
    size_t n;
    switch (key) {
      case 0x09: v->min = get_double(&p, end); break;
      case 0x11: v->max = get_double(&p, end); break;
      case 0x19: v->num = get_double(&p, end); break;
      case 0x21: v->sum = get_double(&p, end); break;
      case 0x29: v->sum_squares = get_double(&p, end); break;
      case 0x32:
        d = get_bytes(&p, end, &n);
        assert_null(v->limits);
        packed_doubles(d, n, &v->limits, &nl);
        break;
      case 0x3a:
        d = get_bytes(&p, end, &n);
        assert_null(v->counts);
        packed_doubles(d, n, &v->counts, &nc);
        break;
      default: fail_msg("unexpected HistogramProto key 0x%llx", (unsigned long long)key);
    }
  }
  assert_int_equal(nl, nc);
  v->nbuckets = nl;
}

static void decode_shape(const unsigned char *p, const unsigned char *end, ev_value *v) {
  v->has_shape = 1;
  while (p < end) {
    uint64_t key = get_varint(&p, end);
    size_t n;
    assert_true(key == 0x12); /* dim */
    (void)get_bytes(&p, end, &n);
    v->rank++;
  }
}

static void decode_tensor(const unsigned char *p, const unsigned char *end, ev_value *v) {
  while (p < end) {
    uint64_t key = get_varint(&p, end);
    const unsigned char *d;
    size_t n;
    switch (key) {
      case 0x08: v->dtype = (int)get_varint(&p, end); break;
      case 0x12:
        d = get_bytes(&p, end, &n);
        decode_shape(d, d + n, v);
        break;
      case 0x42:
        d = get_bytes(&p, end, &n);
        v->nstring_val++;
        free(v->string_val);
        v->string_val = malloc(n + 1);
        assert_non_null(v->string_val);
        memcpy(v->string_val, d, n);
        v->string_val[n] = '\0';
        v->string_len = n;
        break;
      default: fail_msg("unexpected TensorProto key 0x%llx", (unsigned long long)key);
    }
  }
}

static void decode_metadata(const unsigned char *p, const unsigned char *end, ev_value *v) {
  v->has_metadata = 1;
  while (p < end) {
    uint64_t key = get_varint(&p, end);
    const unsigned char *d;
    size_t n;
    if (key == 0x0a) { /* plugin_data */
      const unsigned char *q, *qend;
      d = get_bytes(&p, end, &n);
      q = d;
      qend = d + n;
      while (q < qend) {
        uint64_t k = get_varint(&q, qend);
        const unsigned char *e;
        size_t m;
        e = get_bytes(&q, qend, &m);
        if (k == 0x0a)
          copy_str(v->plugin_name, sizeof v->plugin_name, e, m);
        else if (k == 0x12)
          v->content_len = m;
        else
          fail_msg("unexpected PluginData key 0x%llx", (unsigned long long)k);
      }
    } else if (key == 0x20) {
      v->data_class = (int)get_varint(&p, end);
    } else {
      fail_msg("unexpected SummaryMetadata key 0x%llx", (unsigned long long)key);
    }
  }
}

static void decode_value(const unsigned char *p, const unsigned char *end, ev_value *v) {
  memset(v, 0, sizeof *v);
  while (p < end) {
    uint64_t key = get_varint(&p, end);
    const unsigned char *d;
    size_t n;
    switch (key) {
      case 0x0a:
        d = get_bytes(&p, end, &n);
        copy_str(v->tag, sizeof v->tag, d, n);
        break;
      case 0x15: { /* simple_value, fixed32 float */
        uint32_t bits;
        assert_true(end - p >= 4);
        bits = (uint32_t)get_le(p, 4);
        memcpy(&v->simple, &bits, sizeof v->simple);
        p += 4;
        v->kind = EV_SIMPLE;
        break;
      }
      case 0x2a:
        d = get_bytes(&p, end, &n);
        decode_histo(d, d + n, v);
        v->kind = EV_HISTO;
        break;
      case 0x42:
        d = get_bytes(&p, end, &n);
        decode_tensor(d, d + n, v);
        v->kind = EV_TENSOR;
        break;
      case 0x4a:
        d = get_bytes(&p, end, &n);
        decode_metadata(d, d + n, v);
        break;
      default: fail_msg("unexpected Summary.Value key 0x%llx", (unsigned long long)key);
    }
  }
}

static void decode_summary(const unsigned char *p, const unsigned char *end, ev_event *e) {
  while (p < end) {
    uint64_t key = get_varint(&p, end);
    const unsigned char *d;
    size_t n;
    assert_true(key == 0x0a);
    d = get_bytes(&p, end, &n);
    e->values = realloc(e->values, (e->nvalues + 1) * sizeof *e->values);
    assert_non_null(e->values);
    decode_value(d, d + n, &e->values[e->nvalues++]);
  }
}

static void decode_session_log(const unsigned char *p, const unsigned char *end, ev_event *e) {
  while (p < end) {
    uint64_t key = get_varint(&p, end);
    const unsigned char *d;
    size_t n;
    if (key == 0x08) {
      e->status = (int)get_varint(&p, end);
    } else if (key == 0x12) {
      d = get_bytes(&p, end, &n);
      copy_str(e->path, sizeof e->path, d, n);
    } else {
      fail_msg("unexpected SessionLog key 0x%llx", (unsigned long long)key);
    }
  }
}

static void decode_node(const unsigned char *p, const unsigned char *end, ev_node *n) {
  memset(n, 0, sizeof *n);
  while (p < end) {
    uint64_t key = get_varint(&p, end);
    const unsigned char *d;
    size_t len;
    switch (key) {
      case 0x0a:
        d = get_bytes(&p, end, &len);
        copy_str(n->name, sizeof n->name, d, len);
        break;
      case 0x10: n->all_start_micros = (int64_t)get_varint(&p, end); break;
      case 0x18: n->op_start_rel_micros = (int64_t)get_varint(&p, end); break;
      case 0x20: n->op_end_rel_micros = (int64_t)get_varint(&p, end); break;
      case 0x28: n->all_end_rel_micros = (int64_t)get_varint(&p, end); break;
      case 0x42:
        d = get_bytes(&p, end, &len);
        copy_str(n->label, sizeof n->label, d, len);
        break;
      case 0x50: {
        uint64_t v = get_varint(&p, end);
        assert_true(v <= UINT32_MAX);
        n->thread_id = (uint32_t)v;
        break;
      }
      default: fail_msg("unexpected NodeExecStats key 0x%llx", (unsigned long long)key);
    }
  }
}

static void decode_device(const unsigned char *p, const unsigned char *end, ev_device *dev) {
  memset(dev, 0, sizeof *dev);
  while (p < end) {
    uint64_t key = get_varint(&p, end);
    const unsigned char *d;
    size_t n;
    d = get_bytes(&p, end, &n);
    if (key == 0x0a) {
      copy_str(dev->device, sizeof dev->device, d, n);
    } else if (key == 0x12) {
      dev->nodes = realloc(dev->nodes, (dev->n + 1) * sizeof *dev->nodes);
      assert_non_null(dev->nodes);
      decode_node(d, d + n, &dev->nodes[dev->n++]);
    } else {
      fail_msg("unexpected DeviceStepStats key 0x%llx", (unsigned long long)key);
    }
  }
}

static void decode_run_metadata(const unsigned char *p, const unsigned char *end, ev_event *e) {
  while (p < end) {
    uint64_t key = get_varint(&p, end);
    const unsigned char *d, *q, *qend;
    size_t n;
    assert_true(key == 0x0a); /* step_stats: nothing else is written */
    d = get_bytes(&p, end, &n);
    for (q = d, qend = d + n; q < qend;) {
      const unsigned char *dd;
      size_t m;
      assert_true(get_varint(&q, qend) == 0x0a); /* dev_stats */
      dd = get_bytes(&q, qend, &m);
      e->devices = realloc(e->devices, (e->ndevices + 1) * sizeof *e->devices);
      assert_non_null(e->devices);
      decode_device(dd, dd + m, &e->devices[e->ndevices++]);
    }
  }
}

static void decode_tagged_run_metadata(const unsigned char *p, const unsigned char *end, ev_event *e) {
  while (p < end) {
    uint64_t key = get_varint(&p, end);
    const unsigned char *d;
    size_t n;
    d = get_bytes(&p, end, &n);
    if (key == 0x0a)
      copy_str(e->rm_tag, sizeof e->rm_tag, d, n);
    else if (key == 0x12)
      decode_run_metadata(d, d + n, e);
    else
      fail_msg("unexpected TaggedRunMetadata key 0x%llx", (unsigned long long)key);
  }
}

static void decode_event(const unsigned char *p, size_t len, ev_event *e) {
  const unsigned char *end = p + len;
  memset(e, 0, sizeof *e);
  while (p < end) {
    uint64_t key = get_varint(&p, end);
    const unsigned char *d;
    size_t n;
    switch (key) {
      case 0x09:
        e->wall = get_double(&p, end);
        e->has_wall = 1;
        break;
      case 0x10:
        e->step = (int64_t)get_varint(&p, end);
        e->has_step = 1;
        break;
      case 0x1a:
        d = get_bytes(&p, end, &n);
        copy_str(e->version, sizeof e->version, d, n);
        e->kind = EV_FILE_VERSION;
        break;
      case 0x2a:
        d = get_bytes(&p, end, &n);
        e->kind = EV_SUMMARY;
        decode_summary(d, d + n, e);
        break;
      case 0x3a:
        d = get_bytes(&p, end, &n);
        e->kind = EV_SESSION_LOG;
        decode_session_log(d, d + n, e);
        break;
      case 0x42:
        d = get_bytes(&p, end, &n);
        e->kind = EV_RUN_METADATA;
        decode_tagged_run_metadata(d, d + n, e);
        break;
      default: fail_msg("unexpected Event key 0x%llx", (unsigned long long)key);
    }
  }
}

ev_file *event_file_read(const char *path, int allow_torn) {
  size_t n = 0, off = 0;
  unsigned char *data = (unsigned char *)test_read_file(path, &n);
  ev_file *f = calloc(1, sizeof *f);
  assert_non_null(f);
  assert_non_null(data);
  while (off < n) {
    uint64_t len;
    if (n - off < 16 || (len = get_le(data + off, 8)) > n - off - 16) {
      assert_true(allow_torn);
      f->torn = 1;
      break;
    }
    assert_true(get_le(data + off + 8, 4) == masked(data + off, 8));
    assert_true(get_le(data + off + 12 + len, 4) == masked(data + off + 12, (size_t)len));
    f->events = realloc(f->events, (f->n + 1) * sizeof *f->events);
    assert_non_null(f->events);
    decode_event(data + off + 12, (size_t)len, &f->events[f->n++]);
    off += 16 + (size_t)len;
  }
  free(data);
  return f;
}

void event_summary_decode(const void *data, size_t n, ev_event *e) {
  const unsigned char *p = data;
  memset(e, 0, sizeof *e);
  e->kind = EV_SUMMARY;
  if (n == 0) return; /* no values (and data may be NULL) */
  assert_non_null(p);
  decode_summary(p, p + n, e);
}

void event_values_free(ev_event *e) {
  size_t j;
  for (j = 0; j < e->nvalues; j++) {
    free(e->values[j].limits);
    free(e->values[j].counts);
    free(e->values[j].string_val);
  }
  free(e->values);
  e->values = NULL;
  e->nvalues = 0;
}

static void event_devices_free(ev_event *e) {
  size_t i;
  for (i = 0; i < e->ndevices; i++) free(e->devices[i].nodes);
  free(e->devices);
  e->devices = NULL;
  e->ndevices = 0;
}

void event_file_free(ev_file *f) {
  size_t i;
  if (!f) return;
  for (i = 0; i < f->n; i++) {
    event_values_free(&f->events[i]);
    event_devices_free(&f->events[i]);
  }
  free(f->events);
  free(f);
}

int event_file_list(const char *dir, char names[][600], int cap) {
  DIR *d = opendir(dir);
  struct dirent *e;
  int n = 0, i, j;
  if (d == NULL) return 0;
  while ((e = readdir(d)) != NULL)
    if (strstr(e->d_name, "tfevents") != NULL && strstr(e->d_name, ".tmp-") == NULL) {
      assert_true(n < cap);
      snprintf(names[n++], 600, "%s", e->d_name);
    }
  closedir(d);
  for (i = 1; i < n; i++)
    for (j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
      char t[600];
      memcpy(t, names[j], 600);
      memcpy(names[j], names[j - 1], 600);
      memcpy(names[j - 1], t, 600);
    }
  return n;
}

ev_file *event_file_only(const char *dir) {
  char names[8][600];
  char *path;
  ev_file *f;
  assert_int_equal(event_file_list(dir, names, 8), 1);
  path = test_path(dir, names[0]);
  f = event_file_read(path, 0);
  free(path);
  return f;
}

const ev_value *event_file_find(const ev_file *f, const char *tag, size_t from, const ev_event **ev) {
  size_t i, j;
  for (i = from; i < f->n; i++)
    for (j = 0; j < f->events[i].nvalues; j++)
      if (strcmp(f->events[i].values[j].tag, tag) == 0) {
        if (ev) *ev = &f->events[i];
        return &f->events[i].values[j];
      }
  return NULL;
}

int event_file_count_tag(const ev_file *f, const char *tag) {
  size_t i, j;
  int c = 0;
  for (i = 0; i < f->n; i++)
    for (j = 0; j < f->events[i].nvalues; j++)
      if (strcmp(f->events[i].values[j].tag, tag) == 0) c++;
  return c;
}

const ev_event *event_file_find_run_metadata(const ev_file *f, const char *tag) {
  size_t i;
  for (i = 0; i < f->n; i++)
    if (f->events[i].kind == EV_RUN_METADATA && strcmp(f->events[i].rm_tag, tag) == 0) return &f->events[i];
  return NULL;
}

const ev_node *event_run_metadata_node(const ev_event *e, const char *device, const char *name) {
  size_t i, j;
  for (i = 0; i < e->ndevices; i++)
    if (strcmp(e->devices[i].device, device) == 0)
      for (j = 0; j < e->devices[i].n; j++)
        if (strcmp(e->devices[i].nodes[j].name, name) == 0) return &e->devices[i].nodes[j];
  return NULL;
}
