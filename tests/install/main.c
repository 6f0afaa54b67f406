/* Prints the version of the installed libtern and checks a model loads when one is given. */
#include <stdio.h>

#include <tern/tern.h>

int main(int argc, char** argv) {
  printf("tern %s\n", tern_version());
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
