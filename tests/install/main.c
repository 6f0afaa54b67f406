/* Prints the version of the installed libtern and checks a model loads when one is given; links
 * the generation calls too (they must be exported). */
#include <stdio.h>
#include <tern/tern.h>

int main(int argc, char** argv) {
  printf("tern %s\n", tern_version());
  const tern_generate_options options = tern_default_generate_options();
  /* volatile: the reference survives optimization, so linking checks the symbol is exported. */
  tern_status (*volatile generate)(tern_generator*, const int32_t*, size_t,
                                   const tern_generate_options*, int32_t*, size_t, size_t*) =
      tern_generate_ids;
  if (options.top_p != 1.0f || generate == NULL) return 1;
  if (argc > 1) {
    tern_model* model = NULL;
    if (tern_model_load_from_file(argv[1], &model) != TERN_OK) {
      fprintf(stderr, "%s\n", tern_last_error());
      return 1;
    }
    tern_model_free(model);
    printf("loaded %s\n", argv[1]);
  }
  return 0;
}
